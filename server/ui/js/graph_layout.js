// Radial layout of an entity graph: the centre in the middle, entities on rings by hop count, each ring
// ordered by the angle of a neighbour one ring in (so related entities stay close).

/**
 * Edges as drawn: one line per direction and kind, so "a manages b" and "b mentors a" are two arrows
 * each labelled with its own predicates: {source, target, kind, labels, memoryIds, lane}. The lines of
 * one pair of entities get lanes ..., -1, 0, 1, ... (centred on 0) to be drawn side by side.
 */
export function mergeEdges(edges) {
  const lines = new Map();
  for (const e of edges) {
    const id = [e.source, e.target, e.kind].join("\u0000");
    if (!lines.has(id)) lines.set(id, { source: e.source, target: e.target, kind: e.kind, labels: [], memoryIds: [] });
    const line = lines.get(id);
    if (e.predicate && !line.labels.includes(e.predicate)) line.labels.push(e.predicate);
    line.memoryIds.push(e.memory_id);
  }
  const pairs = new Map();
  for (const line of lines.values()) {
    const pair = [line.source, line.target].sort().join("\u0000");
    if (!pairs.has(pair)) pairs.set(pair, []);
    pairs.get(pair).push(line);
  }
  for (const group of pairs.values()) group.forEach((line, i) => { line.lane = i - (group.length - 1) / 2; });
  return [...lines.values()];
}

/** A line's ends moved `lane` x `gap` to the side of the pair's line (the same side whichever way it points). */
export function laneEnds(p, q, source, target, lane, gap = 14) {
  const [a, b] = source < target ? [p, q] : [q, p]; // one normal per pair of entities
  const len = Math.hypot(b.x - a.x, b.y - a.y) || 1;
  const dx = (-(b.y - a.y) / len) * lane * gap;
  const dy = ((b.x - a.x) / len) * lane * gap;
  return { x1: p.x + dx, y1: p.y + dy, x2: q.x + dx, y2: q.y + dy };
}

/** Positions {entity_id: {x, y, angle}} inside a width x height box. */
export function radialLayout(nodes, edges, width, height) {
  const cx = width / 2;
  const cy = height / 2;
  const maxHop = Math.max(0, ...nodes.map((n) => n.hops));
  const step = (Math.min(width, height) / 2 - 40) / Math.max(1, maxHop);
  const neighbours = new Map();
  for (const e of edges) {
    for (const [x, y] of [[e.source, e.target], [e.target, e.source]]) {
      if (!neighbours.has(x)) neighbours.set(x, []);
      neighbours.get(x).push(y);
    }
  }
  const pos = {};
  for (let hop = 0; hop <= maxHop; hop += 1) {
    const ring = nodes.filter((n) => n.hops === hop);
    const parentAngle = (n) => {
      const inner = (neighbours.get(n.entity_id) || []).map((p) => pos[p]).filter(Boolean);
      return inner.length ? Math.min(...inner.map((p) => p.angle)) : 0;
    };
    ring.sort((a, b) => parentAngle(a) - parentAngle(b) || a.entity_id.localeCompare(b.entity_id));
    ring.forEach((n, i) => {
      if (hop === 0) {
        pos[n.entity_id] = { x: cx, y: cy, angle: 0 };
        return;
      }
      const angle = ((i + 0.5) / ring.length) * 2 * Math.PI - Math.PI / 2;
      pos[n.entity_id] = { x: cx + step * hop * Math.cos(angle), y: cy + step * hop * Math.sin(angle), angle };
    });
  }
  return pos;
}
