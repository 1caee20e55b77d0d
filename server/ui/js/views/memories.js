// Memories: a filterable, paged table over GET /v0/memories; one memory's record and event history.

import { ApiError, api, listAll } from "../api.js";
import { badge, clear, clip, field, fmtDateTime, h, json, message, replace, select, setHash } from "../dom.js";

const TYPES = ["fact", "event", "document", "note", "profile", "chunk"];
const STATUSES = ["active", "superseded", "disputed"];
const FILTERS = ["namespace", "entity", "type", "status", "tag", "archived", "since", "until", "q", "sort", "size"];

function anyOf(values) {
  return [["", "any"], ...values.map((v) => [v, v])];
}

/** The list API's query for the filter values (dates are UTC days). */
export function listQuery(f) {
  return {
    namespace: f.namespace, entity_id: f.entity, type: f.type, status: f.status, tag: f.tag,
    archived: f.archived, q: f.q, sort: f.sort || "timestamp_desc", page_size: f.size || "25",
    since: f.since ? `${f.since}T00:00:00Z` : "", until: f.until ? `${f.until}T00:00:00Z` : "",
  };
}

function filterForm(values, onApply) {
  const input = (name, attrs = {}) => h("input", { name, value: values[name] || "", ...attrs });
  const form = h("form.filters", { role: "search", "aria-label": "Filter memories" },
    field("Text contains", input("q", { type: "search", placeholder: "e.g. Berlin" })),
    field("Namespace", input("namespace", { placeholder: "any" })),
    field("Entity", input("entity", { placeholder: "ent:…" })),
    field("Type", select("type", anyOf(TYPES), values.type || "")),
    field("Status", select("status", anyOf(STATUSES), values.status || "")),
    field("Tag", input("tag")),
    field("Archived", select("archived", [["", "any"], ["false", "no"], ["true", "yes"]], values.archived || "")),
    field("Since (UTC day)", input("since", { type: "date" })),
    field("Until (UTC day, exclusive)", input("until", { type: "date" })),
    field("Order", select("sort", [["timestamp_desc", "newest first"], ["timestamp_asc", "oldest first"]],
      values.sort || "timestamp_desc")),
    field("Page size", select("size", [["25", "25"], ["50", "50"], ["100", "100"], ["200", "200"]], values.size || "25")),
    h("div.actions", {},
      h("button.primary", { type: "submit" }, "Apply filters"),
      h("button", { type: "reset" }, "Clear")));
  const read = () => Object.fromEntries(FILTERS.map((n) => [n, (form.elements[n] && form.elements[n].value) || ""]));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    onApply(read());
  });
  form.addEventListener("reset", () => setTimeout(() => onApply(read()), 0));
  return form;
}

function memoryRow(m, routeHref) {
  return h("tr", {},
    h("td.nowrap", {}, fmtDateTime(m.timestamp)),
    h("td", {}, m.type),
    h("td", {}, m.entity_id ? h("code", {}, m.entity_id) : "—"),
    h("td.text", {}, h("a", { href: routeHref("memory", {}, m.memory_id) }, clip(m.text))),
    h("td", {}, badge(m.status), m.archived ? [" ", badge("archived")] : null),
    h("td", {}, tagList(m.tags || [])));
}

/** Tags, each its own chip: a tag may hold any character, commas too, so they are never joined into text. */
function tagList(tags) {
  return tags.length ? h("ul.tags", {}, tags.map((t) => h("li.tag", {}, t))) : null;
}

export async function memoriesView(main, { route, routeHref }) {
  let filters = Object.fromEntries(FILTERS.map((n) => [n, route.params.get(n) || ""]));
  const cursors = [null]; // cursors[i] opens page i
  let page = 0; // the page shown
  let latest = 0; // bumped by every load: only the newest one draws (a click before a load ends is no skip)
  const status = h("div.status", { "aria-live": "polite" });
  const table = h("div.table-wrap");
  const pager = h("nav.pager", { "aria-label": "Pages" });

  async function load(target = 0) {
    const mine = ++latest;
    replace(status, message("info", "Loading…"));
    let data;
    try {
      data = await api.get("/v0/memories", { ...listQuery(filters), cursor: cursors[target] });
    } catch (error) {
      if (mine !== latest) return;
      replace(status, message("error", error instanceof ApiError ? `${error.message}` : String(error)));
      clear(table);
      clear(pager);
      return;
    }
    if (mine !== latest) return;
    page = target;
    cursors[page + 1] = data.next_cursor;
    const count = data.items.length;
    replace(status, h("p", { id: "memories-count" }, `Page ${page + 1}: ${count} memor${count === 1 ? "y" : "ies"}`,
      data.next_cursor ? " (more on the next page)" : ""));
    replace(table, count ? h("table.grid", { "aria-describedby": "memories-count" },
      h("caption.visually-hidden", {}, "Memories matching the filters"),
      h("thead", {}, h("tr", {}, ["Time (UTC)", "Type", "Entity", "Text", "Status", "Tags"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, data.items.map((m) => memoryRow(m, routeHref)))) : message("info", "No memory matches these filters."));
    replace(pager,
      h("button", { type: "button", disabled: page === 0, onclick: () => load(page - 1) }, "← Previous page"),
      h("button", { type: "button", disabled: !data.next_cursor, onclick: () => load(page + 1) }, "Next page →"));
  }

  const form = filterForm(filters, (values) => {
    filters = values;
    cursors.length = 1;
    setHash(routeHref("memories", values));
    load(0);
  });
  main.append(h("h2", { tabindex: "-1" }, "Memories"), form, status, table, pager);
  await load();
}

// --- one memory -----------------------------------------------------------------------------------

const HISTORY_PAGES = 10; // 5,000 events of one memory

const FIELD_ORDER = [
  "memory_id", "type", "text", "namespace", "entity_id", "agent_id", "status", "archived", "timestamp",
  "subject", "predicate", "object", "object_type", "unit", "keys", "valid_from", "valid_to", "confidence",
  "tags", "sensitivity", "metadata", "provenance", "created_at", "updated_at", "org_id",
];

function recordList(m) {
  const names = [...FIELD_ORDER.filter((n) => n in m), ...Object.keys(m).filter((n) => !FIELD_ORDER.includes(n))];
  return h("dl.record", {}, names.map((n) => {
    const v = m[n];
    const shown = v !== null && typeof v === "object" ? h("pre", {}, json(v)) : v === null ? "—" : String(v);
    return [h("dt", {}, n), h("dd", {}, shown)];
  }));
}

function historyTable(items) {
  if (!items.length) return message("info", "No events recorded for this memory.");
  return h("table.grid", {},
    h("caption.visually-hidden", {}, "Event history"),
    h("thead", {}, h("tr", {}, ["When (UTC)", "Event", "Details"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, items.map((e) => h("tr", {},
      h("td.nowrap", {}, fmtDateTime(e.at)), h("td", {}, h("code", {}, e.type)),
      h("td", {}, h("code.small", {}, JSON.stringify(e.data)))))));
}

/** The tags as chips, each removable, and a box that adds one tag exactly as typed (any character,
 * commas too); `list` is what Save sends. */
function tagEditor(initial, disabled) {
  const list = [...initial];
  const chips = h("ul.tags", { "aria-label": "Tags of this memory" });
  const input = h("input", { name: "tag", maxlength: "64", autocomplete: "off", spellcheck: "false", disabled });
  const addPending = () => {
    if (input.value && !list.includes(input.value)) list.push(input.value);
    input.value = "";
    draw();
  };
  const remove = (i) => {
    list.splice(i, 1);
    draw();
    (chips.querySelectorAll("button")[Math.min(i, list.length - 1)] || input).focus();
  };
  function draw() {
    replace(chips, list.length ? list.map((t, i) => h("li.tag", {}, h("span", {}, t),
      h("button.remove", { type: "button", disabled, "aria-label": `Remove tag ${t}`, onclick: () => remove(i) }, "×")))
      : h("li.none", {}, "no tags"));
  }
  input.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || !input.value) return; // Enter in an empty box saves
    event.preventDefault();
    addPending();
  });
  draw();
  const el = h("div.tag-editor", {}, chips, h("div.inline", {}, field("Add a tag", input),
    h("button", { type: "button", disabled, onclick: () => { addPending(); input.focus(); } }, "Add")));
  return { el, list, addPending };
}

function actionsPanel(m, { session, navigate }, reload) {
  const canWrite = session.key.canWrite;
  const status = h("div", { "aria-live": "polite" });
  // after: by default the view redrawn with the news, focus back on the control that acted (`focusId`)
  const run = async (what, fn, focusId, after = () => reload(`${what}: done.`, focusId)) => {
    replace(status, message("info", `${what}…`));
    try {
      await fn();
      await after();
    } catch (error) {
      replace(status, message("error", `${what} failed: ${error.message}`));
    }
  };
  const tags = tagEditor(m.tags || [], !canWrite);
  const controls = [
    h("form.tag-form", {
      "aria-label": "Tags",
      onsubmit: (event) => {
        event.preventDefault();
        tags.addPending();
        run("Save tags", () => api.patch(`/v0/memories/${encodeURIComponent(m.memory_id)}`, { tags: tags.list }),
          "save-tags");
      },
    }, tags.el, h("button#save-tags", { type: "submit", disabled: !canWrite }, "Save tags")),
    h("button", {
      type: "button", id: "archive-toggle", disabled: !canWrite,
      onclick: () => run(m.archived ? "Unarchive" : "Archive",
        () => api.patch(`/v0/memories/${encodeURIComponent(m.memory_id)}`, { archived: !m.archived }), "archive-toggle"),
    }, m.archived ? "Unarchive" : "Archive"),
    h("button.danger", {
      type: "button", id: "delete-memory", disabled: !canWrite,
      onclick: () => {
        if (!window.confirm(`Delete ${m.memory_id}? This cannot be undone.`)) return;
        run("Delete", () => api.del(`/v0/memories/${encodeURIComponent(m.memory_id)}`), null,
          () => navigate("memories", {}));
      },
    }, "Delete"),
  ];
  return h("section.panel", { "aria-labelledby": "actions-title" },
    h("h3#actions-title", {}, "Change"),
    canWrite ? null : message("info", "This key is read-only: changes are disabled (and the API refuses them)."),
    h("div.action-row", {}, controls), status);
}

export async function memoryView(main, ctx) {
  const id = ctx.route.arg;
  const load = async (note, focusId) => {
    const [m, events] = await Promise.all([
      api.get(`/v0/memories/${encodeURIComponent(id)}`),
      listAll("/v0/observability/events", { memory_id: id, limit: 500 }, HISTORY_PAGES), // oldest first
    ]);
    if (ctx.signal.aborted) return; // the view was left meanwhile: its main is another view's now
    const links = [];
    if (m.entity_id) {
      const params = { entity: m.entity_id, namespace: m.namespace };
      links.push(h("a", { href: ctx.routeHref("timeline", params) }, "Fact timeline of ", m.entity_id),
        " · ", h("a", { href: ctx.routeHref("graph", params) }, "Graph around ", m.entity_id), " · ");
    }
    links.push(h("a", { href: ctx.routeHref("memories", {}) }, "Back to the list"));
    replace(main,
      h("h2", { tabindex: "-1" }, "Memory ", h("code", {}, id)),
      h("p.links", {}, links),
      note ? message("info", note) : null,
      h("div.columns", {},
        h("section.panel", { "aria-labelledby": "record-title" }, h("h3#record-title", {}, "Record"), recordList(m)),
        h("div", {},
          h("section.panel", { "aria-labelledby": "history-title" },
            h("h3#history-title", {}, "Event history"), historyTable(events.items),
            events.truncated ? message("info", `The first ${events.items.length} events only; newer ones are left out.`) : null),
          actionsPanel(m, ctx, load))));
    if (focusId) document.getElementById(focusId).focus(); // the redraw replaced the focused control
  };
  await load();
}
