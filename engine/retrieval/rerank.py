"""Maximal marginal relevance (MMR) over the candidates' vectors.

Greedy: at each step pick the candidate maximizing
    LAMBDA * relevance - (1 - LAMBDA) * max cosine similarity to the already picked ones,
with relevance = the fused score min-max normalized over the list (LAMBDA: the preset's
`rerank_lambda`, 0.7 by default, `loci.wire.tuning`). Candidates without a
vector (seed snippets, texts never embedded) have similarity 0 to everything. Returns a permutation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engine.retrieval.normalize import minmax
from loci.wire.tuning import DEFAULTS, TUNING

LAMBDA = DEFAULTS.rerank_lambda
PICKS = TUNING.rerank_picks


def mmr(
    scores: npt.NDArray[np.float64],
    vectors: Sequence[npt.NDArray[np.float32] | None],
    lam: float = LAMBDA,
    picks: int | None = None,
) -> list[int]:
    """`picks`: stop choosing after that many (the rest follow by relevance); the first `picks` places
    are those of the full permutation."""
    n = len(scores)
    if n <= 1:
        return list(range(n))
    rel = minmax.normalize(np.asarray(scores, dtype=np.float64))
    dim = next((len(v) for v in vectors if v is not None), 0)
    if dim == 0:
        return [int(i) for i in np.argsort(-rel, kind="stable")]
    mat = np.zeros((n, dim), dtype=np.float32)
    has = [i for i, v in enumerate(vectors) if v is not None and len(v) == dim]
    if has:
        mat[has] = np.stack([vectors[i] for i in has])  # type: ignore[misc]
    # value = lam * rel - (1 - lam) * max similarity to the picked ones; picked ones get -inf
    penalty_rows = (1.0 - lam) * (mat @ mat.T).astype(np.float64)
    base = lam * rel
    penalty = np.zeros(n, dtype=np.float64)
    value = np.empty(n, dtype=np.float64)
    picked: list[int] = []
    for _ in range(n if picks is None else min(n, picks)):
        np.subtract(base, penalty, out=value)
        k = int(np.argmax(value))
        picked.append(k)
        base[k] = -np.inf
        np.maximum(penalty, penalty_rows[k], out=penalty)
    rest = np.flatnonzero(base > -np.inf)
    return picked + [int(i) for i in rest[np.argsort(-rel[rest], kind="stable")]]
