// Assemble playground: POST /v0/context/assemble with a turn, a preset, weights and a budget; shows the
// rendered context verbatim, token counts, budget actions and each match's score components.
// Ingest is off unless asked for, so playing writes nothing.

import { ApiError, api } from "../api.js";
import { badge, field, fmtNum, h, json, message, momentInput, momentValue, replace, select, setHash } from "../dom.js";

export const CHANNELS = ["semantic", "bm25", "graph_prior", "recency_decay", "confidence"];
const PRESETS = ["balanced", "fast", "factual", "recent", "graphy"];
const SECTIONS = [["facts", "Facts"], ["recent_events", "Recent events"], ["summary", "Summary"], ["sources", "Sources"]];

/** The context as text, section by section, each line exactly as the API returned it. */
export function contextText(context) {
  const parts = [];
  for (const [name, title] of SECTIONS) {
    const value = context[name];
    if (Array.isArray(value) ? value.length : value) {
      parts.push(`${title}:`, ...(Array.isArray(value) ? value.map((line) => `- ${line}`) : [value]), "");
    }
  }
  return parts.join("\n").trimEnd();
}

/** The request body for the form's values; an empty Max facts/events box leaves the API's default. */
export function assembleBody(v) {
  const counts = Object.fromEntries(["max_facts", "max_events"]
    .filter((name) => String(v[name] ?? "").trim() !== "").map((name) => [name, Number(v[name])]));
  const body = {
    entity_id: v.entity, namespace: v.namespace || "default", turn: v.turn,
    budget: { max_context_tokens: Number(v.budget) },
    retrieval: { preset: v.preset },
    return: { include_scores: true, include_raw_matches: true, trace: true, ...counts },
    ingest: v.ingest ? { extract: true, store_turn: "event" } : { extract: false, store_turn: "none" },
  };
  if (v.custom) body.retrieval.weights = Object.fromEntries(CHANNELS.map((c) => [c, Number(v.weights[c])]));
  if (v.as_of) body.as_of = v.as_of;
  return body;
}

let presetWeights = null; // {preset: {channel: weight}}, read once from the API's OpenAPI document

/** Each preset's channel weights as the server runs them: the OpenAPI document lists them on
 * RetrievalOptions.preset (`x-preset-weights`, from loci.wire.tuning), so the UI keeps no copy. */
export async function loadPresetWeights() {
  if (!presetWeights) {
    const doc = await api.get("/schema/openapi.json");
    const preset = doc.components.schemas.RetrievalOptions.properties.preset;
    const found = [preset, ...(preset.anyOf || [])].find((sc) => sc["x-preset-weights"]);
    if (!found) throw new Error("the API's OpenAPI document lists no preset weights");
    presetWeights = found["x-preset-weights"];
  }
  return presetWeights;
}

function weightSliders() {
  const sliders = {};
  const rows = CHANNELS.map((c) => {
    const out = h("output", {}, "");
    const input = h("input", { type: "range", name: `w_${c}`, min: "0", max: "1", step: "0.01",
      oninput: () => { out.value = fmtNum(Number(input.value), 2); } });
    sliders[c] = { input, out };
    return h("div.weight", {}, field(c, input), out);
  });
  const show = (weights) => CHANNELS.forEach((c) => {
    sliders[c].input.value = String(weights[c]);
    sliders[c].out.value = fmtNum(weights[c], 2);
  });
  return { sliders, show, box: h("fieldset.weights", {}, h("legend", {}, "Channel weights"), rows) };
}

function form(params, session, weightsByPreset, onRun) {
  const entity = h("input", { name: "entity", required: true, value: params.entity, placeholder: "ent:…" });
  const namespace = h("input", { name: "namespace", value: params.namespace });
  const turn = h("textarea", { name: "turn", required: true, rows: "3", maxlength: "20000" });
  turn.value = params.turn;
  const preset = select("preset", PRESETS.map((p) => [p, p]), params.preset);
  const custom = h("input", { type: "checkbox", name: "custom" });
  const { sliders, show, box } = weightSliders();
  // step 1: any budget the API takes (256 to 8192) is a value, so the one shown is the one sent (a step of
  // 64 from 256 snapped 1200 to 1216); the output reads the slider's own value, after the browser's clamping
  const budgetOut = h("output", {});
  const budget = h("input", { type: "range", name: "budget", min: "256", max: "8192", step: "1", value: params.budget,
    oninput: () => { budgetOut.value = budget.value; } });
  budgetOut.value = budget.value;
  const maxFacts = h("input", { type: "number", name: "max_facts", min: "0", max: "100", value: "12" });
  const maxEvents = h("input", { type: "number", name: "max_events", min: "0", max: "100", value: "6" });
  const asOf = momentInput("as_of", params.as_of);
  const ingest = h("input", { type: "checkbox", name: "ingest", disabled: !session.key.canWrite });
  // the sliders show the chosen preset's weights until "custom" is ticked (then they are what is sent)
  const showPreset = () => {
    const weights = weightsByPreset && weightsByPreset[preset.value];
    if (weights) show(weights);
  };
  const syncCustom = () => {
    Object.values(sliders).forEach(({ input }) => { input.disabled = !custom.checked; });
    if (!custom.checked) showPreset();
  };
  custom.disabled = !weightsByPreset; // the weights are unknown until the API says them
  custom.addEventListener("change", syncCustom);
  preset.addEventListener("change", showPreset);
  syncCustom();

  const el = h("form.playground", {
    "aria-label": "Assemble request",
    onsubmit: (event) => {
      event.preventDefault();
      onRun({
        entity: entity.value.trim(), namespace: namespace.value.trim() || "default", turn: turn.value,
        preset: preset.value, custom: custom.checked, budget: budget.value, max_facts: maxFacts.value,
        max_events: maxEvents.value, as_of: momentValue(asOf), ingest: ingest.checked,
        weights: Object.fromEntries(CHANNELS.map((c) => [c, sliders[c].input.value])),
      });
    },
  },
  h("div.grid2", {},
    h("div", {}, field("Entity", entity), field("Namespace", namespace), field("Turn", turn),
      field("Preset", preset), h("div.field.check", {}, custom, h("label", { for: custom.id = "custom-weights" }, "Custom weights (else the preset's)"))),
    h("div", {}, box,
      h("div.weight", {}, field("Budget (max context tokens)", budget), budgetOut),
      h("div.row", {}, field("Max facts", maxFacts), field("Max events", maxEvents)),
      field("As of (UTC, optional)", asOf))),
  h("div.field.check", {}, ingest,
    h("label", { for: ingest.id = "ingest" }, "Ingest this turn (extract facts and store the turn: writes memories)"),
    session.key.canWrite ? null : h("small.hint", {}, " — disabled: this key is read-only")),
  h("div.actions", {}, h("button.primary#run-assemble", { type: "submit" }, "Assemble")));
  return { el, show, custom };
}

function componentBar(match, maxScore) {
  const parts = Object.entries(match.score_components || {});
  const bar = h("div.stack", { role: "img", "aria-label": parts.map(([n, c]) => `${n} ${fmtNum(c.contrib)}`).join(", ") });
  for (const [name, c] of parts) {
    if (!(c.contrib > 0)) continue;
    const seg = h("span", { class: ["stack-seg", `ch-${CHANNELS.includes(name) ? name : "boost"}`],
      title: `${name}: raw ${fmtNum(c.raw)}, norm ${fmtNum(c.norm)} × weight ${fmtNum(c.weight)} = ${fmtNum(c.contrib)}` });
    seg.style.width = `${(c.contrib / maxScore) * 100}%`;
    bar.append(seg);
  }
  return bar;
}

function matchesPanel(matches, actions) {
  if (!matches.length) return message("info", "No candidate matched.");
  const maxScore = Math.max(1e-9, ...matches.map((m) => Math.max(m.score, Object.values(m.score_components || {})
    .reduce((sum, c) => sum + Math.max(0, c.contrib), 0))));
  const cut = new Map(actions.filter((a) => a.memory_id).map((a) => [a.memory_id, a]));
  return h("div", {},
    h("p.legend", {}, "Score components (contribution = weight × normalized score): ",
      [...CHANNELS, "boost"].map((c) => h("span.key", {}, h("span", { class: ["swatch", `ch-${c}`] }), c))),
    h("ol.matches", {}, matches.map((m) => {
      const action = cut.get(m.memory_id);
      return h("li.match", {},
        h("div.match-head", {}, h("span.score", {}, fmtNum(m.score)), " ", badge(m.type, "type"), " ",
          action ? badge(`${action.action}`, "cut") : null, " ", h("span.match-text", {}, m.text)),
        componentBar(m, maxScore),
        h("small.reason", {}, (m.reason || []).join(" · "), action && action.notes ? ` — ${action.notes}` : ""));
    })));
}

function summaryPanel(res) {
  const rs = res.retrieval_summary || {};
  const tc = res.context.token_counts || {};
  const weights = rs.weights_used || {};
  return h("dl.record.compact", {},
    h("dt", {}, "Tokens"), h("dd#token-counts", {}, `${tc.used ?? "?"} used of ${tc.budget} (planned ${tc.planned}, dropped ${tc.dropped})`),
    h("dt", {}, "Budget use"), h("dd", {}, h("meter", { min: "0", max: String(tc.budget || 1), value: String(tc.used || 0), "aria-label": "tokens used of the budget" })),
    h("dt", {}, "Preset"), h("dd", {}, `${rs.preset || ""} · top_k ${rs.top_k} · depth ${rs.depth} · half-life ${rs.recency_half_life_days} d · ${rs.normalization}`),
    h("dt", {}, "Weights used"), h("dd", {}, CHANNELS.map((c) => `${c} ${fmtNum(weights[c], 2)}`).join(" · ")),
    h("dt", {}, "Candidates"), h("dd", {}, Object.entries(rs.candidate_counts || {}).map(([k, v]) => `${k} ${v}`).join(" · ")),
    h("dt", {}, "Diversity"), h("dd", {}, Object.entries(rs.diversity_actions || {}).map(([k, v]) => `${k} ${v}`).join(" · ")),
    h("dt", {}, "Flags"), h("dd", {}, res.flags.degraded ? badge("degraded", "warn") : "—", " ",
      res.flags.weights_renormalized ? badge("weights renormalized", "warn") : null,
      res.redaction && res.redaction.applied ? badge(`redacted: ${res.redaction.rules.join(", ")}`, "warn") : null),
    h("dt", {}, "Cost"), h("dd", {}, Object.entries(res.cost || {}).map(([k, v]) => `${k} ${v}`).join(" · ")));
}

function results(res) {
  const actions = res.context.budget_actions || [];
  const upserts = (res.extracted && res.extracted.upserts) || [];
  return [
    h("section.panel", { "aria-labelledby": "ctx-title" },
      h("h3#ctx-title", {}, "Rendered context"),
      h("p.hint", {}, "The context lines (facts, recent events, summary, sources) verbatim, as the LLM receives them."),
      h("pre#context-text.context", { tabindex: "0" }, contextText(res.context) || "(empty)")),
    h("div.columns", {},
      h("section.panel", { "aria-labelledby": "sum-title" }, h("h3#sum-title", {}, "Tokens and retrieval"), summaryPanel(res)),
      h("section.panel", { "aria-labelledby": "cut-title" }, h("h3#cut-title", {}, `Budget actions (${actions.length})`),
        actions.length ? h("table.grid#budget-actions", {},
          h("thead", {}, h("tr", {}, ["Action", "Memory", "Why"].map((c) => h("th", { scope: "col" }, c)))),
          h("tbody", {}, actions.map((a) => h("tr", {}, h("td", {}, a.action), h("td", {}, a.memory_id ? h("code", {}, a.memory_id) : "—"),
            h("td", {}, a.notes || ""))))) : message("info", "Nothing was cut: everything fit the budget."))),
    h("section.panel", { "aria-labelledby": "matches-title" },
      h("h3#matches-title", {}, `Matches (${(res.matches || []).length})`), matchesPanel(res.matches || [], actions)),
    upserts.length ? h("section.panel", { "aria-labelledby": "ingest-title" }, h("h3#ingest-title", {}, "Ingested"),
      h("ul", {}, upserts.map((u) => h("li", {}, `${u.action} ${u.memory_id}`, u.supersedes.length ? ` (supersedes ${u.supersedes.join(", ")})` : "")))) : null,
    h("details.panel", {}, h("summary", {}, "Raw response (JSON)"), h("pre", {}, json(res))),
  ];
}

export async function assembleView(main, { route, routeHref, session }) {
  const p = route.params;
  const params = {
    entity: p.get("entity") || "", namespace: p.get("namespace") || "default", turn: p.get("turn") || "",
    preset: p.get("preset") || "balanced", budget: p.get("budget") || "1200", as_of: p.get("as_of") || "",
  };
  const out = h("div.results", { "aria-live": "polite" });
  let weightsByPreset = null;
  let latest = 0; // bumped by every run: an earlier run's late answer draws nothing
  try {
    weightsByPreset = await loadPresetWeights();
  } catch (error) {
    out.append(message("error", `The presets' weights are unknown (${error.message}): custom weights are off.`));
  }
  const f = form(params, session, weightsByPreset, async (values) => {
    const mine = ++latest;
    setHash(routeHref("assemble", { entity: values.entity, namespace: values.namespace, turn: values.turn,
      preset: values.preset, budget: values.budget, as_of: values.as_of }));
    replace(out, message("info", "Assembling…"));
    try {
      const res = await api.post("/v0/context/assemble", assembleBody(values));
      if (mine !== latest) return;
      if (!f.custom.checked) f.show(res.retrieval_summary.weights_used); // what ran (e.g. degraded: no semantic)
      replace(out, results(res));
    } catch (error) {
      if (mine !== latest) return;
      replace(out, message("error", error instanceof ApiError ? `${error.status} ${error.code}: ${error.message}` : String(error)));
    }
  });
  main.append(h("h2", { tabindex: "-1" }, "Assemble playground"),
    h("p", {}, "Runs ", h("code", {}, "POST /v0/context/assemble"), " with scores and matches. Ingest is off, so nothing is written unless you tick it."),
    f.el, out);
}
