// Radial layout of an entity graph: the centre in the middle, entities on rings by hop count, each ring
// ordered by the angle of a neighbour one ring in (so related entities stay close).

/** Edges merged per unordered pair of entities: {a, b, labels, kinds, memoryIds}. */
export function mergeEdges(edges) {
  const pairs = new Map();
  for (const e of edges) {
    const [a, b] = e.source < e.target ? [e.source, e.target] : [e.target, e.source];
    const id = `${a}\u0000${b}`;
    if (!pairs.has(id)) pairs.set(id, { a, b, source: e.source, target: e.target, labels: [], kinds: new Set(), memoryIds: [] });
    const p = pairs.get(id);
    if (e.predicate && !p.labels.includes(e.predicate)) p.labels.push(e.predicate);
    p.kinds.add(e.kind);
    p.memoryIds.push(e.memory_id);
  }
  return [...pairs.values()];
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
