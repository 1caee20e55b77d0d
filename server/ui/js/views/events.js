// Live events: the org's event stream (GET /v0/observability/events, text/event-stream) read with
// fetch() so the key goes in the Authorization header; starts at the server's "now".

import { api, followEvents } from "../api.js";
import { field, fmtDateTime, h, replace, setHash } from "../dom.js";

const MAX_ROWS = 500;
const STATES = {
  connecting: "Connecting…", live: "Live: new events appear at the top.", retrying: "Connection lost; retrying…",
  stopped: "Stopped.",
};

function eventRow(item, routeHref) {
  const memory = item.memory_id ? h("a", { href: routeHref("memory", {}, item.memory_id) }, h("code", {}, item.memory_id)) : "—";
  // the namespace a memory event names (data.namespace); without it a link would show "default"'s timeline
  const namespace = item.data && typeof item.data.namespace === "string" ? item.data.namespace : null;
  const entityCode = h("code", {}, item.entity_id);
  const entity = !item.entity_id ? "—" : namespace === null ? entityCode
    : h("a", { href: routeHref("timeline", { entity: item.entity_id, namespace }) }, entityCode);
  return h("tr", { dataset: { type: item.type } },
    h("td.nowrap", {}, fmtDateTime(item.at)), h("td", {}, h("code", {}, item.type)), h("td", {}, memory),
    h("td", {}, entity), h("td", {}, h("code.small", {}, JSON.stringify(item.data))));
}

export async function eventsView(main, { route, routeHref, signal, onCleanup }) {
  const params = { type: route.params.get("type") || "", entity: route.params.get("entity") || "" };
  const type = h("input", { name: "type", value: params.type, placeholder: "e.g. memory.created" });
  const entity = h("input", { name: "entity", value: params.entity, placeholder: "ent:…" });
  const state = h("p#stream-state.msg", { role: "status" }, "Not started.");
  const body = h("tbody");
  const counter = h("span#event-count", {}, "0");
  const toggle = h("button.primary", { type: "submit" }, "Start");
  let stop = null; // ends the open stream
  let on = false; // started and not halted (the stream may still be waiting for the server's clock)
  let run = 0; // bumped by every start and halt: a start whose turn has passed opens no stream
  let count = 0;

  async function start() {
    const mine = ++run;
    on = true;
    toggle.textContent = "Stop";
    let health;
    try {
      health = await api.get("/v0/health", undefined, signal); // the server's clock: from now on
    } catch (error) {
      if (mine === run) halt(`could not read the server's clock: ${error.message}`);
      return;
    }
    if (mine !== run || signal.aborted) return; // stopped, restarted or the view was left meanwhile
    stop = followEvents({ type: params.type, entity_id: params.entity, since: health.now }, {
      onEvent: (item) => {
        body.prepend(eventRow(item, routeHref));
        count += 1;
        counter.textContent = String(count);
        while (body.rows.length > MAX_ROWS) body.lastChild.remove();
      },
      onState: (s, detail) => {
        state.dataset.state = s;
        replace(state, STATES[s] || s, detail ? ` (${detail})` : "");
      },
    });
  }

  function halt(detail) {
    run += 1;
    on = false;
    if (stop) stop();
    else if (detail) replace(state, STATES.stopped, ` (${detail})`);
    stop = null;
    toggle.textContent = "Start";
  }

  onCleanup(() => halt());
  const form = h("form.filters", {
    "aria-label": "Event stream filters",
    onsubmit: async (event) => {
      event.preventDefault();
      if (on) {
        halt();
        return;
      }
      params.type = type.value.trim();
      params.entity = entity.value.trim();
      setHash(routeHref("events", params));
      await start();
    },
  }, field("Event type", type), field("Entity", entity),
  h("div.actions", {}, toggle, h("button", { type: "button", onclick: () => { body.replaceChildren(); count = 0; counter.textContent = "0"; } }, "Clear")));

  main.append(h("h2", { tabindex: "-1" }, "Live events"),
    h("p", {}, "Every write and assemble of this org appends an event; they stream here as they happen."),
    form, state, h("p.hint", {}, "Events received: ", counter, ` (the newest ${MAX_ROWS} are kept)`),
    h("div.table-wrap", {}, h("table.grid#events-table", {},
      h("caption.visually-hidden", {}, "Events, newest first"),
      h("thead", {}, h("tr", {}, ["When (UTC)", "Event", "Memory", "Entity", "Data"].map((c) => h("th", { scope: "col" }, c)))),
      body)));
  await start();
}
