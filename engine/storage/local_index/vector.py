"""Exact inner-product search over L2-normalized vectors of one model, restricted to eligible rows.

Vectors are appended to a faiss IndexFlatIP as they arrive (a memory's vector may come before or
after the memory); `vrow_row` maps faiss ids to index rows. A search passes the eligible faiss ids as
an IDSelectorBitmap, so faiss computes only eligible rows and returns the exact top k among them.
Small eligible sets (<= `SMALL`) are scored with one numpy matrix-vector product instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import faiss
import numpy as np
import numpy.typing as npt

from engine.errors import InvalidInput
from engine.storage.local_index.columns import Mask
from engine.storage.local_index.growable import Growable

SMALL = 2048

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def normalized(vec: npt.ArrayLike) -> npt.NDArray[np.float32]:
    arr = np.ascontiguousarray(vec, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(arr))
    return arr / norm if norm > 0 else arr


class VectorIndex:
    def __init__(self) -> None:
        self.dim: int | None = None
        self._index: faiss.IndexFlatIP | None = None
        self.vrow_row = Growable(np.int64, -1)
        self.has_vector = np.zeros(1024, dtype=np.bool_)  # per index row

    def add(self, rows: npt.NDArray[np.int64], vectors: Sequence[npt.ArrayLike]) -> None:
        """Add one vector per row (rows that already have one, or a vector of another dim, are skipped)."""
        if len(vectors) == 0:
            return
        if self.dim is None:
            self.dim = int(np.asarray(vectors[0]).reshape(-1).shape[0])
            self._index = faiss.IndexFlatIP(self.dim)
        keep = [i for i, v in enumerate(vectors) if np.asarray(v).size == self.dim]
        if not keep:
            return
        rows = np.asarray(rows, dtype=np.int64)[keep]
        block = np.stack([np.asarray(vectors[i], dtype=np.float32).reshape(-1) for i in keep])
        has = self.has_vector
        if has.size < int(rows.max()) + 1:
            grown = np.zeros(max(int(rows.max()) + 1, 2 * has.size), dtype=np.bool_)
            grown[: has.size] = has
            self.has_vector = has = grown
        _, first = np.unique(rows, return_index=True)
        fresh = np.zeros(rows.size, dtype=np.bool_)
        fresh[first] = True
        fresh &= ~has[rows]
        if not fresh.any():
            return
        rows, block = rows[fresh], block[fresh]
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        block = np.ascontiguousarray(block / np.where(norms > 0, norms, 1.0), dtype=np.float32)
        has[rows] = True
        assert self._index is not None
        self._index.add(block)
        self.vrow_row.extend(rows)

    def _matrix(self) -> npt.NDArray[np.float32]:
        assert self._index is not None and self.dim is not None
        n = int(self._index.ntotal)
        flat = faiss.rev_swig_ptr(self._index.get_xb(), n * self.dim)
        return np.asarray(flat).reshape(n, self.dim)

    def search(self, mask: Mask, query: npt.ArrayLike, k: int) -> tuple[IntArray, FloatArray]:
        """(rows, similarities) of the top k eligible rows, best first."""
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        if self._index is None or self.dim is None or k <= 0:
            return empty
        q = normalized(query)
        if q.shape[0] != self.dim:
            raise InvalidInput(f"query vector has {q.shape[0]} dimensions; the index has {self.dim}")
        vrow_row = self.vrow_row.view
        eligible = mask[vrow_row]
        count = int(eligible.sum())
        if count == 0:
            return empty
        kk = min(k, count)
        if count <= SMALL:
            ids = np.flatnonzero(eligible)
            sims = self._matrix()[ids] @ q
            top = np.argpartition(-sims, kk - 1)[:kk] if kk < ids.size else np.arange(ids.size)
            top = top[np.argsort(-sims[top], kind="stable")]
            return vrow_row[ids[top]], sims[top].astype(np.float64)
        bitmap = np.packbits(eligible, bitorder="little")
        selector = faiss.IDSelectorBitmap(eligible.shape[0], faiss.swig_ptr(bitmap))
        params = faiss.SearchParameters(sel=selector)  # type: ignore[call-arg]
        sims_2d, ids_2d = self._index.search(q.reshape(1, -1), kk, params=params)
        ids = ids_2d[0]
        good = ids >= 0
        return vrow_row[ids[good]], sims_2d[0][good].astype(np.float64)
