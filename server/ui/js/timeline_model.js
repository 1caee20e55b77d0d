// Fact timelines as data: facts grouped by conflict key, each a validity interval, and what was valid
// at a moment by the API's as_of rule: (valid_from or timestamp) <= t < valid_to, archived never.

/** The conflict key of a fact: its first key, else subject|predicate, else the memory itself. */
export function conflictKey(m) {
  if (m.keys && m.keys.length) return m.keys[0];
  if (m.subject && m.predicate) return `${m.subject}|${m.predicate}`;
  return `(${m.memory_id})`;
}

/** A fact's value as a short string (the object with its unit, else the text). */
export function factValue(m) {
  const o = m.object;
  if (o === null || o === undefined || o === "") return m.text;
  if (typeof o === "object") return JSON.stringify(o);
  return m.unit ? `${o} ${m.unit}` : String(o);
}

export function segmentOf(m) {
  const start = Date.parse(m.valid_from || m.timestamp);
  const end = m.valid_to ? Date.parse(m.valid_to) : null;
  return { memory: m, value: factValue(m), start, end, status: m.status, archived: Boolean(m.archived) };
}

/** True when the segment was valid at time t (ms), as the API's as_of sees it. */
export function validAt(seg, t) {
  return !seg.archived && seg.start <= t && (seg.end === null || t < seg.end);
}

/** {rows: [{key, segments}], min, max}: rows by key, segments by start; the span covers `now`. */
export function buildTimelines(facts, now) {
  const byKey = new Map();
  for (const m of facts) {
    const key = conflictKey(m);
    if (!byKey.has(key)) byKey.set(key, []);
    byKey.get(key).push(segmentOf(m));
  }
  const rows = [...byKey.entries()]
    .map(([key, segments]) => ({ key, segments: segments.sort((a, b) => a.start - b.start) }))
    .sort((a, b) => a.key.localeCompare(b.key));
  const times = rows.flatMap((r) => r.segments.flatMap((sg) => (sg.end === null ? [sg.start] : [sg.start, sg.end])));
  let min = times.length ? Math.min(...times) : now - 86400000;
  let max = Math.max(now, ...times);
  if (max - min < 3600000) min = max - 3600000;
  const pad = (max - min) * 0.02;
  min -= pad;
  max += pad;
  return { rows, min, max };
}

/** What was true at t: per row, the segments valid then. */
export function trueAt(rows, t) {
  return rows.map((r) => ({ key: r.key, segments: r.segments.filter((sg) => validAt(sg, t)) }));
}

/** Position of t on [min, max] as a percentage (clamped). */
export function percent(t, min, max) {
  return Math.max(0, Math.min(100, ((t - min) / (max - min)) * 100));
}

const MINUTE = 60000;
const HOUR = 3600000;
const DAY = 86400000;

/**
 * The as_of slider's key steps (ms) over a span of `span` ms: an arrow moves by the largest of a
 * minute, an hour or a day that is at most a hundredth of the span; Shift+arrow by the next unit down
 * (a second under a minute); Page Up/Down by about a tenth of the span, in whole arrow steps.
 */
export function keySteps(span) {
  const units = [1000, MINUTE, HOUR, DAY];
  let i = units.length - 1;
  while (i > 1 && units[i] > span / 100) i -= 1;
  const arrow = units[i];
  return { arrow, fine: units[i - 1], page: Math.max(arrow, Math.round(span / 10 / arrow) * arrow) };
}
