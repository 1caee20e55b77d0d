"""One (org, namespace) index: filter columns, keyword postings, entity graph, and per-model vectors.

Rows are append-only: replacing a memory kills its old row and appends a new one; dead rows stay
masked out until the local search drops the index for a rebuild (see `LocalSearch`). `generation`
moves with every change of rows or vectors; what a scope derives from the rows lives in its ScopeView
(view.py), kept while the generation stands. A row never changes, so the decoded memory of a row
(`memories`, filled by the SQLite store's reads) stays right for as long as the index lives.
Hits are ordered by score (best first), ties by newer timestamp, then memory_id.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from engine.models import Memory, text_hash
from engine.storage.base import Adjacent, Hit, Scope, Vector
from engine.storage.local_index.bm25 import KeywordIndex
from engine.storage.local_index.columns import Columns
from engine.storage.local_index.graph import GraphIndex
from engine.storage.local_index.vector import VectorIndex
from engine.storage.local_index.view import ScopeView
from engine.storage.scope_filter import memory_entities
from engine.storage.tokenize import tokenize

VectorLoader = Callable[[str, Sequence[str]], dict[str, Vector]]
VIEWS = 8  # scopes kept per generation (a request's channels, a few requests at once)
_SERIALS = itertools.count(1)


class NamespaceIndex:
    def __init__(self, org_id: str, namespace: str) -> None:
        self.org_id = org_id
        self.namespace = namespace
        self.lock = threading.RLock()
        self.cols = Columns()
        self.keywords = KeywordIndex()
        self.graph = GraphIndex()
        self.vectors: dict[str, VectorIndex] = {}
        self.row_hash: list[str] = []
        self.rows_by_hash: dict[str, list[int]] = {}
        self.serial = next(_SERIALS)  # never reused: keys the memories kept by row (search.py)
        self.loaded_at = 0  # the local search's counter when rows or vectors were last changed
        self.generation = 0
        self._views: dict[Scope, ScopeView] = {}  # of this generation
        #: decoded memories by row (a row never changes: nothing to invalidate)
        self.memories: dict[int, Memory] = {}
        # event rows, live or dead, in (timestamp, memory_id) order: built on first use, then merged
        # into on each add (rows never change type or timestamp; the scope mask drops dead ones)
        self._events: npt.NDArray[np.int64] | None = None

    def _changed(self) -> None:
        self.generation += 1
        self._views.clear()

    def view(self, scope: Scope) -> ScopeView:
        """The scope's view at this generation; a scope whose mask equals a kept view's shares it."""
        found = self._views.get(scope)
        if found is not None:
            return found
        mask = self.cols.mask(scope)
        for other in self._views.values():
            if np.array_equal(other.mask, mask):
                found = other
                break
        if found is None:
            found = ScopeView(self, mask)
        if len(self._views) >= VIEWS:
            self._views.pop(next(iter(self._views)))
        self._views[scope] = found
        return found

    # --- maintenance (callers hold `lock`) ------------------------------------------------------
    def add(self, memories: Sequence[Memory], load_vectors: VectorLoader) -> None:
        latest: dict[str, Memory] = {m.memory_id: m for m in memories}  # a batch may repeat an id: last wins
        batch = list(latest.values())
        self._changed()
        for m in batch:
            self.remove(m.memory_id)
        first = self.cols.append_bulk(batch)
        rows = list(range(first, first + len(batch)))
        self.keywords.add_bulk(first, [tokenize(m.text) for m in batch])
        self.graph.add_bulk(first, [memory_entities(m) for m in batch])
        for row, m in zip(rows, batch, strict=True):
            h = text_hash(m.text)
            self.row_hash.append(h)
            self.rows_by_hash.setdefault(h, []).append(row)
        for model in self.vectors:
            self._attach(model, rows, load_vectors(model, list({self.row_hash[r] for r in rows})))
        if self._events is not None:
            self._events = self._merge_events(self._events, rows)

    def remove(self, memory_id: str) -> bool:
        row = self.cols.kill(memory_id)
        if row is None:
            return False
        self._changed()
        self.keywords.remove(row)
        self.memories.pop(row, None)
        return True

    def load_model(self, model: str, load_vectors: VectorLoader) -> None:
        self._changed()
        self.vectors[model] = VectorIndex()
        live_rows = list(self.cols.row_of.values())
        found = load_vectors(model, list({self.row_hash[r] for r in live_rows}))
        self._attach(model, live_rows, found)

    def add_vectors(self, model: str, vectors: dict[str, Vector]) -> None:
        if model not in self.vectors:
            return
        rows = [r for h in vectors for r in self.rows_by_hash.get(h, ()) if self.cols.live.view[r]]
        self._changed()
        self._attach(model, rows, vectors)

    def _attach(self, model: str, rows: Sequence[int], found: dict[str, Vector]) -> None:
        pairs = [(r, found[self.row_hash[r]]) for r in sorted(rows) if self.row_hash[r] in found]
        if pairs:
            self.vectors[model].add(np.asarray([r for r, _ in pairs], dtype=np.int64), [v for _, v in pairs])

    # --- search (callers hold `lock`) -----------------------------------------------------------
    def _ranked(self, rows: npt.NDArray[np.int64], primary: npt.NDArray[np.float64], k: int) -> list[Hit]:
        """Order by `primary` ascending, then newer timestamp, then memory_id; keep k."""
        if rows.size == 0 or k <= 0:
            return []
        if rows.size > k:  # keep the k best (and every tie at the cut) before sorting
            kth = np.partition(primary, k - 1)[k - 1]
            better = np.flatnonzero(primary < kth)
            tied = np.flatnonzero(primary == kth)
            need = k - better.size
            if tied.size > need:
                neg_ts = -self.cols.ts.view[rows[tied]]
                cut_ts = np.partition(neg_ts, need - 1)[need - 1]
                tied = tied[neg_ts <= cut_ts]
            chosen_idx = np.concatenate((better, tied))
            rows, primary = rows[chosen_idx], primary[chosen_idx]
        ts = self.cols.ts.view[rows]
        order = np.lexsort((-ts, primary))
        cut = min(k, rows.size)
        # extend the cut over exact ties so the memory_id tie-break below is exact
        last = order[cut - 1]
        while cut < rows.size and primary[order[cut]] == primary[last] and ts[order[cut]] == ts[last]:
            cut += 1
        ids = self.cols.memory_ids
        # the sort key reads Python scalars: cheaper than indexing numpy arrays element by element
        p, t, r = primary.tolist(), ts.tolist(), rows.tolist()
        chosen = sorted(order[:cut].tolist(), key=lambda i: (p[i], -t[i], ids[r[i]]))[:k]
        return [Hit(ids[r[i]], p[i]) for i in chosen]

    def vector_search(self, scope: Scope, model: str, query: Vector, k: int) -> list[Hit]:
        rows, sims = self.vectors[model].search(self.view(scope).mask, query, k)
        hits = self._ranked(rows, -sims, k)
        return [Hit(h.memory_id, -h.raw) for h in hits]

    def keyword_search(self, scope: Scope, text: str, k: int) -> list[Hit]:
        query = tokenize(text)
        if not query or k <= 0:
            return []
        view = self.view(scope)
        rows, scores = self.keywords.scores(view.keyword_stats(), view.mask, query)
        hits = self._ranked(rows, -scores, k)
        return [Hit(h.memory_id, -h.raw) for h in hits]

    def graph_search(self, scope: Scope, seeds: Sequence[str], depth: int, k: int) -> list[Hit]:
        rows, dist = self.graph.distances(self.view(scope).mask, seeds, depth, skip=scope.entity_id)
        return self._ranked(rows, dist.astype(np.float64), k)

    def scope_size(self, scope: Scope) -> int:
        return int(self.view(scope).mask.sum())

    def speaker_shares(self, scope: Scope, words: Sequence[str]) -> list[float]:
        spoken, n = self.view(scope).speakers()
        if n == 0 or not words:
            return [0.0] * len(words)
        names = [name.split() for name in self.cols.speakers.names]
        return [
            float(sum(int(spoken[c + 1]) for c, parts in enumerate(names) if w in parts)) / n for w in words
        ]

    def event_rows(self) -> npt.NDArray[np.int64]:
        """Every event row, live or dead, in (timestamp, memory_id) order."""
        if self._events is None:
            self._events = self._merge_events(np.zeros(0, dtype=np.int64), range(self.cols.n))
        return self._events

    def _merge_events(self, order: npt.NDArray[np.int64], rows: Sequence[int]) -> npt.NDArray[np.int64]:
        """`order` with the event rows among `rows` inserted at their (timestamp, memory_id) places."""
        code = self.cols.types.get("event")
        kinds = self.cols.type.view
        ts = self.cols.ts.view
        ids = self.cols.memory_ids
        new = sorted((r for r in rows if kinds[r] == code), key=lambda r: (int(ts[r]), ids[r]))
        if not new:
            return order
        if order.size == 0:
            return np.asarray(new, dtype=np.int64)
        order_ts = ts[order]
        new_ts = ts[np.asarray(new, dtype=np.int64)]
        left = np.searchsorted(order_ts, new_ts, side="left")
        right = np.searchsorted(order_ts, new_ts, side="right")
        places = left.tolist()
        for i in np.flatnonzero(right > left).tolist():  # equal timestamps: memory_id decides
            lo, hi, mid = int(left[i]), int(right[i]), ids[new[i]]
            while lo < hi and ids[int(order[lo])] < mid:
                lo += 1
            places[i] = lo
        return np.insert(order, places, new)

    def adjacent_events(
        self, scope: Scope, memory_ids: Sequence[str], span: int, max_gap_us: int
    ) -> list[Adjacent]:
        if span <= 0 or not memory_ids:
            return []
        order = self.view(scope).events()
        if order.size == 0:
            return []
        pos = np.full(self.cols.n, -1, dtype=np.int64)
        pos[order] = np.arange(order.size)
        ts = self.cols.ts.view[order]
        ids = self.cols.memory_ids
        out: list[Adjacent] = []
        for anchor in dict.fromkeys(memory_ids):
            row = self.cols.row_of.get(anchor)
            p = int(pos[row]) if row is not None else -1
            if p < 0:
                continue
            # the events `span` places either side, as Python lists (cheaper to walk than numpy scalars)
            lo = max(0, p - span)
            rows, times = order[lo : p + span + 1].tolist(), ts[lo : p + span + 1].tolist()
            for step in (-1, 1):
                q = p - lo
                for d in range(1, span + 1):
                    nxt = q + step
                    if nxt < 0 or nxt >= len(rows) or abs(times[nxt] - times[q]) > max_gap_us:
                        break
                    out.append(Adjacent(anchor, ids[rows[nxt]], step * d))
                    q = nxt
        return out
