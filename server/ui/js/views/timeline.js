// Fact timelines: an entity's facts of every status, one row per conflict key, validity as bars, and an
// as_of slider that shows what was true then.

import { ApiError, listAll } from "../api.js";
import { badge, field, fmtDateTime, fmtDay, h, message, replace, setHash } from "../dom.js";
import { buildTimelines, keySteps, percent, trueAt, validAt } from "../timeline_model.js";

const MAX_PAGES = 10; // 2,000 facts

function entityForm(values, onLoad) {
  const entity = h("input", { name: "entity", value: values.entity, required: true, placeholder: "ent:…" });
  const namespace = h("input", { name: "namespace", value: values.namespace });
  return h("form.filters", {
    "aria-label": "Choose an entity",
    onsubmit: (event) => {
      event.preventDefault();
      onLoad({ entity: entity.value.trim(), namespace: namespace.value.trim() || "default" });
    },
  }, field("Entity", entity), field("Namespace", namespace),
  h("div.actions", {}, h("button.primary", { type: "submit" }, "Show timeline")));
}

function segmentLink(sg, model, routeHref) {
  const end = sg.end === null ? "open" : fmtDay(sg.end);
  const label = `${sg.value}: ${sg.status}${sg.archived ? ", archived" : ""}, ${fmtDay(sg.start)} to ${end}`;
  const link = h("a", {
    href: routeHref("memory", {}, sg.memory.memory_id),
    class: ["seg", `seg-${sg.status}`, sg.archived && "seg-archived"],
    title: label,
    "aria-label": label,
    dataset: { memoryId: sg.memory.memory_id },
  }, h("span.seg-text", { "aria-hidden": "true" }, sg.value));
  const right = sg.end === null ? model.max : sg.end;
  link.style.left = `${percent(sg.start, model.min, model.max)}%`;
  link.style.width = `${Math.max(0.6, percent(right, model.min, model.max) - percent(sg.start, model.min, model.max))}%`;
  return link;
}

function axis(model) {
  const ticks = [];
  for (let i = 0; i <= 4; i += 1) {
    const t = model.min + ((model.max - model.min) * i) / 4;
    const tick = h("span.tick", {}, fmtDay(t));
    tick.style.left = `${i * 25}%`;
    ticks.push(tick);
  }
  return h("div.axis", { "aria-hidden": "true" }, ticks);
}

function legend() {
  return h("p.legend", {}, "Bars: ", badge("active"), " ", badge("superseded"), " ", badge("disputed"), " ",
    badge("archived"), " · an outlined bar was valid at the chosen time · bars without an end are still open.");
}

function stepName(ms) {
  return { 1000: "a second", 60000: "a minute", 3600000: "an hour", 86400000: "a day" }[ms];
}

function renderTimelines(box, facts, params, routeHref) {
  const now = Date.now();
  const model = buildTimelines(facts, now);
  const marks = [];
  const bars = []; // [link, segment]
  const rows = model.rows.map((row) => {
    const mark = h("div.asof-mark", { "aria-hidden": "true" });
    marks.push(mark);
    const links = row.segments.map((sg) => {
      const link = segmentLink(sg, model, routeHref);
      bars.push([link, sg]);
      return link;
    });
    return h("li.tl-row", {}, h("div.tl-key", {}, h("code", {}, row.key)), h("div.tl-track", {}, links, mark));
  });
  const output = h("output#asof-value", { for: "asof" });
  // step 1: the value is an exact moment (a coarser step rounded "now" by hours); the keys step below
  const slider = h("input#asof", {
    type: "range", name: "as_of", min: String(Math.floor(model.min)), max: String(Math.ceil(model.max)),
    step: "1", value: String(now),
  });
  const steps = keySteps(model.max - model.min);
  const thenTable = h("div.then", { "aria-live": "polite" });
  const assembleLink = h("a");

  function update() {
    const t = Number(slider.value);
    const iso = new Date(t).toISOString();
    output.value = fmtDateTime(iso);
    slider.setAttribute("aria-valuetext", fmtDateTime(iso));
    marks.forEach((m) => { m.style.left = `${percent(t, model.min, model.max)}%`; });
    bars.forEach(([a, sg]) => a.classList.toggle("seg-then", validAt(sg, t)));
    const then = trueAt(model.rows, t);
    replace(thenTable, h("table.grid#true-then", {},
      h("caption", {}, `What was true at ${fmtDateTime(iso)}`),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Conflict key"), h("th", { scope: "col" }, "Value then"),
        h("th", { scope: "col" }, "Stored status"))),
      h("tbody", {}, then.map((r) => h("tr", {},
        h("td", {}, h("code", {}, r.key)),
        h("td.value", {}, r.segments.length ? r.segments.map((sg) => sg.value).join(" / ") : "—"),
        h("td", {}, r.segments.map((sg) => badge(sg.status))))))));
    assembleLink.setAttribute("href", routeHref("assemble", { entity: params.entity, namespace: params.namespace, as_of: iso }));
    replace(assembleLink, "Assemble a context as of this time");
  }

  const moveTo = (t) => {
    slider.value = String(Math.min(Number(slider.max), Math.max(Number(slider.min), t)));
    update();
  };
  const KEYS = { ArrowLeft: -1, ArrowDown: -1, ArrowRight: 1, ArrowUp: 1, PageDown: -10, PageUp: 10 };
  slider.addEventListener("keydown", (event) => {
    const sign = Math.sign(KEYS[event.key] || 0);
    if (!sign || event.altKey || event.ctrlKey || event.metaKey) return; // Home/End stay native
    event.preventDefault();
    const size = event.key.startsWith("Page") ? steps.page : event.shiftKey ? steps.fine : steps.arrow;
    moveTo(Number(slider.value) + sign * size);
  });
  slider.addEventListener("input", update);
  const toNow = () => {
    const t = Date.now();
    if (t > Number(slider.max)) slider.max = String(t); // the page has been open a while
    moveTo(t);
  };
  replace(box,
    h("p", {}, `${facts.length} facts in ${model.rows.length} conflict keys, ${fmtDay(model.min)} to ${fmtDay(model.max)}.`),
    legend(),
    h("div.slider", {},
      field("As of", slider, `Drag, or use the arrow keys (${stepName(steps.arrow)}; with Shift ${stepName(steps.fine)}; `
        + "Page Up/Down a tenth of the span), to see what was true then."),
      output,
      h("button", { type: "button", onclick: toNow }, "Now")),
    h("ol.timelines", { "aria-label": "Timelines by conflict key" }, rows),
    axis(model),
    thenTable,
    h("p", {}, assembleLink));
  update();
}

export async function timelineView(main, { route, routeHref }) {
  const params = { entity: route.params.get("entity") || "", namespace: route.params.get("namespace") || "default" };
  const box = h("div.timeline", { "aria-live": "polite" });
  let latest = 0; // bumped by every load: an earlier entity's late answer draws nothing

  async function load(values) {
    const mine = ++latest;
    Object.assign(params, values);
    setHash(routeHref("timeline", params));
    replace(box, message("info", "Loading facts…"));
    try {
      // newest first: over the cap the oldest are left out, never what is true now
      const { items, truncated } = await listAll("/v0/memories", {
        entity_id: params.entity, namespace: params.namespace, type: "fact",
        status: "active,superseded,disputed", sort: "timestamp_desc", page_size: 200,
      }, MAX_PAGES);
      if (mine !== latest) return;
      if (!items.length) {
        replace(box, message("info", `No facts for ${params.entity} in namespace ${params.namespace}.`));
        return;
      }
      renderTimelines(box, items, params, routeHref);
      if (truncated) {
        const oldest = fmtDateTime(items[items.length - 1].timestamp);
        box.prepend(message("info", `Truncated: the newest ${items.length} facts only; older ones (stored before ${oldest}) are left out.`));
      }
    } catch (error) {
      if (mine !== latest) return;
      replace(box, message("error", error instanceof ApiError ? error.message : String(error)));
    }
  }

  main.append(h("h2", { tabindex: "-1" }, "Fact timelines"),
    h("p", {}, "Every fact of an entity (active, superseded, disputed), one row per conflict key, by validity."),
    entityForm(params, load), box);
  if (params.entity) await load(params);
}
