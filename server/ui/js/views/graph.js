// Entity graph: the entities and fact edges around an entity (GET /v0/entities/{id}/graph), drawn
// radially, with the same data as tables.

import { ApiError, api } from "../api.js";
import { badge, clip, field, h, message, momentInput, momentValue, replace, s, select, setHash } from "../dom.js";
import { laneEnds, mergeEdges, radialLayout } from "../graph_layout.js";

const W = 900;
const H = 560;

function graphForm(values, onLoad) {
  const entity = h("input", { name: "entity", value: values.entity, required: true, placeholder: "ent:…" });
  const namespace = h("input", { name: "namespace", value: values.namespace });
  const depth = select("depth", [["0", "0"], ["1", "1"], ["2", "2"]], values.depth);
  const asOf = momentInput("as_of", values.as_of);
  return h("form.filters", {
    "aria-label": "Choose an entity",
    onsubmit: (event) => {
      event.preventDefault();
      onLoad({ entity: entity.value.trim(), namespace: namespace.value.trim() || "default", depth: depth.value,
        as_of: momentValue(asOf) });
    },
  }, field("Entity", entity), field("Namespace", namespace), field("Depth (hops)", depth),
  field("As of (UTC, optional)", asOf),
  h("div.actions", {}, h("button.primary", { type: "submit" }, "Show graph")));
}

function drawing(graph, params, routeHref) {
  const merged = mergeEdges(graph.edges);
  const pos = radialLayout(graph.nodes, graph.edges, W, H);
  const lines = merged.filter((e) => pos[e.source] && pos[e.target]).map((e) => {
    const end = laneEnds(pos[e.source], pos[e.target], e.source, e.target, e.lane);
    const fact = e.kind === "fact";
    return s("g", { class: fact ? "edge edge-fact" : "edge edge-mention", dataset: { source: e.source, target: e.target } },
      s("line", { ...end, "marker-end": fact ? "url(#arrow)" : undefined }),
      e.labels.length ? s("text", { x: (end.x1 + end.x2) / 2, y: (end.y1 + end.y2) / 2 - 4, "text-anchor": "middle" }, e.labels.join(", ")) : null);
  });
  const nodes = graph.nodes.map((n) => {
    const p = pos[n.entity_id];
    const centre = n.entity_id === graph.entity_id;
    const label = `${n.entity_id}: ${n.hops} hop${n.hops === 1 ? "" : "s"}, ${n.memories} memor${n.memories === 1 ? "y" : "ies"}`;
    return s("a", { href: routeHref("graph", { ...params, entity: n.entity_id }), class: centre ? "node node-centre" : "node",
      "aria-label": centre ? `${label} (centre)` : `${label}; show the graph around it` },
    s("title", {}, label),
    s("circle", { cx: p.x, cy: p.y, r: centre ? 14 : 9 }),
    s("text", { x: p.x, y: p.y + (centre ? 30 : 22), "text-anchor": "middle" }, n.entity_id));
  });
  return s("svg", { viewBox: `0 0 ${W} ${H}`, class: "graph", role: "group", "aria-label": `Entity graph around ${graph.entity_id}` },
    s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "20", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" },
      s("path", { d: "M 0 0 L 10 5 L 0 10 z" }))),
    s("g", {}, lines), s("g", {}, nodes));
}

function tables(graph, routeHref) {
  const edgeRows = graph.edges.map((e) => h("tr", {},
    h("td", {}, h("code", {}, e.source)), h("td", {}, e.kind === "fact" ? e.predicate || "" : h("em", {}, "mentions")),
    h("td", {}, h("code", {}, e.target)), h("td", {}, h("a", { href: routeHref("memory", {}, e.memory_id) }, e.memory_id))));
  const memoryRows = graph.memories.map((m) => h("tr", {},
    h("td", {}, String(m.hops)), h("td", {}, m.type), h("td.text", {}, h("a", { href: routeHref("memory", {}, m.memory_id) }, clip(m.text))),
    h("td", {}, badge(m.status))));
  return h("div.columns", {},
    h("section.panel", { "aria-labelledby": "edges-title" }, h("h3#edges-title", {}, `Edges (${graph.edges.length})`),
      edgeRows.length ? h("table.grid", {}, h("thead", {}, h("tr", {}, ["From", "Predicate", "To", "Memory"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, edgeRows)) : message("info", "No edges: no fact links this entity to another.")),
    h("section.panel", { "aria-labelledby": "reach-title" }, h("h3#reach-title", {}, `Memories in reach (${graph.memories.length})`),
      h("table.grid", {}, h("thead", {}, h("tr", {}, ["Hops", "Type", "Text", "Status"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, memoryRows))));
}

export async function graphView(main, { route, routeHref }) {
  const params = {
    entity: route.params.get("entity") || "", namespace: route.params.get("namespace") || "default",
    depth: route.params.get("depth") || "2", as_of: route.params.get("as_of") || "",
  };
  const box = h("div.graph-box", { "aria-live": "polite" });
  let latest = 0; // bumped by every load: an earlier entity's late answer draws nothing

  async function load(values) {
    const mine = ++latest;
    Object.assign(params, values);
    setHash(routeHref("graph", params));
    replace(box, message("info", "Loading the graph…"));
    try {
      const graph = await api.get(`/v0/entities/${encodeURIComponent(params.entity)}/graph`,
        { namespace: params.namespace, depth: params.depth, as_of: params.as_of });
      if (mine !== latest) return;
      replace(box,
        h("p", {}, `${graph.nodes.length} entities, ${graph.edges.length} edges, ${graph.memories.length} memories within ${graph.depth} hops`,
          graph.as_of ? ` as of ${graph.as_of}` : " (active memories)", graph.truncated ? "; more were in reach (truncated)." : "."),
        h("p.legend", {}, "Solid arrows: facts (subject → object, labelled with the predicate); dashed: a memory of one entity mentions another. ",
          "Select an entity to centre the graph on it."),
        h("div.graph-frame", {}, drawing(graph, params, routeHref)),
        tables(graph, routeHref));
    } catch (error) {
      if (mine !== latest) return;
      replace(box, message("error", error instanceof ApiError ? error.message : String(error)));
    }
  }

  main.append(h("h2", { tabindex: "-1" }, "Entity graph"),
    h("p", {}, "The entities and edges the retrieval graph channel walks from an entity, to the API's depth (0 to 2)."),
    graphForm(params, load), box);
  if (params.entity) await load(params);
}
