"""Plain (non-indexed) scoring over a list of candidate memories.

Used by `InMemoryStore` for small corpora and by the tests as the oracle the fast index must match.
BM25 here is written out term by term (k1=1.5, b=0.75, Lucene's idf ln(1 + (N - df + 0.5) / (df + 0.5)),
repeated query terms counted each time), with corpus statistics over the candidates given; the tests
check it against `rank_bm25` with that idf.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from engine.models import Memory
from engine.storage.base import Hit, Vector
from engine.storage.scope_filter import memory_entities
from engine.storage.tokenize import tokenize
from engine.timeutil import to_micros

K1 = 1.5
B = 0.75


def bm25_scores(docs: Sequence[Sequence[str]], query: Sequence[str]) -> np.ndarray:
    n = len(docs)
    if n == 0:
        return np.zeros(0)
    freqs = [Counter(d) for d in docs]
    df: Counter[str] = Counter()
    for f in freqs:
        df.update(f.keys())
    doc_len = np.array([len(d) for d in docs], dtype=np.float64)
    avgdl = float(doc_len.sum()) / n
    idf = {word: math.log(1 + (n - freq + 0.5) / (freq + 0.5)) for word, freq in df.items()}
    scores = np.zeros(n)
    if avgdl == 0:
        return scores
    for q in query:
        tf = np.array([f.get(q, 0) for f in freqs], dtype=np.float64)
        scores += idf.get(q, 0.0) * (tf * (K1 + 1) / (tf + K1 * (1 - B + B * doc_len / avgdl)))
    return scores


def _order_key(hit_raw: float, memory: Memory) -> tuple[float, int, str]:
    return (-hit_raw, -to_micros(memory.timestamp), memory.memory_id)


def keyword_hits(candidates: Sequence[Memory], text: str, k: int) -> list[Hit]:
    query = tokenize(text)
    if not query or k <= 0:
        return []
    scores = bm25_scores([tokenize(m.text) for m in candidates], query)
    ranked = sorted(
        (i for i in range(len(candidates)) if scores[i] > 0),
        key=lambda i: _order_key(float(scores[i]), candidates[i]),
    )
    return [Hit(candidates[i].memory_id, float(scores[i])) for i in ranked[:k]]


def vector_hits(
    candidates: Sequence[Memory], vectors: Mapping[str, Vector], query: Vector, k: int
) -> list[Hit]:
    """`vectors` maps memory_id -> L2-normalized vector; memories without one are not candidates."""
    if k <= 0:
        return []
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    if norm > 0:
        q = q / norm
    scored = [(float(np.dot(vectors[m.memory_id], q)), m) for m in candidates if m.memory_id in vectors]
    scored.sort(key=lambda pair: _order_key(pair[0], pair[1]))
    return [Hit(m.memory_id, s) for s, m in scored[:k]]


def graph_hits(
    candidates: Sequence[Memory], seeds: Sequence[str], depth: int, k: int, skip: str | None = None
) -> list[Hit]:
    """BFS over the entity graph formed by the candidates (each memory links every entity it touches),
    never through entity `skip` (the request's own)."""
    seeds = [s for s in seeds if s != skip]
    if k <= 0 or not seeds or depth < 0:
        return []
    touches = [[e for e in memory_entities(m) if e != skip] for m in candidates]
    adjacency: dict[str, set[str]] = {}
    for ents in touches:
        for e in ents:
            adjacency.setdefault(e, set()).update(x for x in ents if x != e)
    dist: dict[str, int] = {s: 0 for s in seeds}
    frontier = list(dict.fromkeys(seeds))
    for hop in range(1, depth + 1):
        nxt: list[str] = []
        for e in frontier:
            for nb in adjacency.get(e, ()):
                if nb not in dist:
                    dist[nb] = hop
                    nxt.append(nb)
        frontier = nxt
    scored: list[tuple[int, Memory]] = []
    for m, ents in zip(candidates, touches, strict=True):
        hops = [dist[e] for e in ents if e in dist]
        if hops:
            scored.append((min(hops), m))
    scored.sort(key=lambda pair: (pair[0], -to_micros(pair[1].timestamp), pair[1].memory_id))
    return [Hit(m.memory_id, float(d)) for d, m in scored[:k]]
