"""Maximal marginal relevance (MMR) over the candidates' vectors.

Greedy: at each step pick the candidate maximizing
    LAMBDA * relevance - (1 - LAMBDA) * max cosine similarity to the already picked ones,
with relevance = the fused score min-max normalized over the list, LAMBDA = 0.7. Candidates without a
vector (seed snippets, texts never embedded) have similarity 0 to everything. Returns a permutation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engine.retrieval.normalize import minmax

LAMBDA = 0.7


def mmr(
    scores: npt.NDArray[np.float64], vectors: Sequence[npt.NDArray[np.float32] | None], lam: float = LAMBDA
) -> list[int]:
    n = len(scores)
    if n <= 1:
        return list(range(n))
    rel = minmax.normalize(np.asarray(scores, dtype=np.float64))
    dim = next((len(v) for v in vectors if v is not None), 0)
    if dim == 0:
        return [int(i) for i in np.argsort(-rel, kind="stable")]
    mat = np.zeros((n, dim), dtype=np.float32)
    for i, v in enumerate(vectors):
        if v is not None and len(v) == dim:
            mat[i] = v
    sims = (mat @ mat.T).astype(np.float64)
    picked: list[int] = []
    available = np.ones(n, dtype=bool)
    max_sim = np.zeros(n, dtype=np.float64)
    for _ in range(n):
        value = lam * rel - (1.0 - lam) * max_sim
        value[~available] = -np.inf
        k = int(np.argmax(value))
        picked.append(k)
        available[k] = False
        np.maximum(max_sim, sims[k], out=max_sim)
    return picked
