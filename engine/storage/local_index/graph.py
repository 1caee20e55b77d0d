"""The entity graph: nodes are entity ids, and each memory links every entity it touches
(entity_id, subject, an entity-valued object; see `scope_filter.memory_entities`).

Only eligible memories (the Scope mask) form edges, so a superseded or archived fact neither is
returned nor links entities. A memory's distance is the smallest hop count of the entities it
touches from the seeds: 0 = it touches a seed; d = it touches an entity d hops away. Breadth-first
search runs vectorized over the (row, entity) edge arrays, one pass per hop.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engine.storage.local_index.columns import Codes, Mask
from engine.storage.local_index.growable import Growable

IntArray = npt.NDArray[np.int64]


class GraphIndex:
    def __init__(self) -> None:
        self.entities = Codes()
        self.edge_row = Growable(np.int64, 0)
        self.edge_ent = Growable(np.int64, 0)

    def add(self, row: int, entities: Sequence[str]) -> None:
        for e in entities:
            self.edge_row.append(row)
            self.edge_ent.append(self.entities.add(e))

    def add_bulk(self, first_row: int, entity_lists: Sequence[Sequence[str]]) -> None:
        rows: list[int] = []
        ents: list[int] = []
        add = self.entities.add
        for i, entities in enumerate(entity_lists):
            for e in entities:
                rows.append(first_row + i)
                ents.append(add(e))
        self.edge_row.extend(rows)
        self.edge_ent.extend(ents)

    def distances(
        self, mask: Mask, seeds: Sequence[str], depth: int, skip: str | None = None
    ) -> tuple[IntArray, IntArray]:
        """(rows, hop distance) of eligible rows within `depth` hops of a seed, unordered; the walk never
        enters entity `skip` (the request's own: every candidate touches it, so through it every
        candidate would be a hop away)."""
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        skip_code = self.entities.get(skip) if skip is not None else None
        seed_codes = [c for c in (self.entities.get(s) for s in seeds) if c is not None and c != skip_code]
        if not seed_codes or depth < 0:
            return empty
        n_ent = len(self.entities.names)
        on = mask[self.edge_row.view]
        er = self.edge_row.view[on]
        ee = self.edge_ent.view[on]
        dist_ent = np.full(n_ent, -1, dtype=np.int64)
        if skip_code is not None:
            dist_ent[skip_code] = depth + 1  # never a frontier: it counts as reached beyond the walk
        frontier = np.asarray(sorted(set(seed_codes)), dtype=np.int64)
        dist_ent[frontier] = 0
        n_rows = mask.shape[0]
        row_dist = np.full(n_rows, -1, dtype=np.int64)
        in_frontier = np.zeros(n_ent, dtype=np.bool_)
        for hop in range(depth + 1):
            in_frontier[:] = False
            in_frontier[frontier] = True
            touched_rows = np.zeros(n_rows, dtype=np.bool_)
            touched_rows[er[in_frontier[ee]]] = True
            new_rows = touched_rows & (row_dist < 0)
            if not new_rows.any():
                break
            row_dist[new_rows] = hop
            if hop == depth:
                break
            touched_ents = np.zeros(n_ent, dtype=np.bool_)
            touched_ents[ee[new_rows[er]]] = True
            frontier = np.flatnonzero(touched_ents & (dist_ent < 0))
            if frontier.size == 0:
                break
            dist_ent[frontier] = hop + 1
        hit = np.flatnonzero(row_dist >= 0)
        return hit.astype(np.int64), row_dist[hit]
