"""Cross-check of our recall@k, MRR and nDCG@10 against ranx on small random rankings.

Slow: ranx JIT-compiles with numba (about 45 s the first time on the shared machine, ~6 s once
numba's cache is warm), which is why per-question metrics are our own small functions.
"""

from __future__ import annotations

import random

import pytest

from evals.metrics import RECALL_KS, dedupe, ndcg_at_k, ranx_means, recall_at_k, reciprocal_rank


@pytest.mark.slow
def test_our_ranking_metrics_match_ranx() -> None:
    rng = random.Random(42)
    corpus = [f"D{i // 20 + 1}:{i % 20 + 1}" for i in range(120)]
    ranked: dict[str, list[str]] = {}
    evidence: dict[str, set[str]] = {}
    for q in range(60):
        qid = f"q{q}"
        evidence[qid] = set(rng.sample(corpus, rng.randint(1, 6)))
        ranking = rng.sample(corpus, rng.randint(0, 70))
        if rng.random() < 0.3:  # repeated ids, as when several memories map to one turn
            ranking = ranking + ranking[: len(ranking) // 2]
        ranked[qid] = ranking
    ours: dict[str, float] = {}
    for k in RECALL_KS:
        ours[f"recall@{k}"] = sum(recall_at_k(dedupe(ranked[q]), evidence[q], k) for q in ranked) / len(
            ranked
        )
    ours["mrr"] = sum(reciprocal_rank(dedupe(ranked[q]), evidence[q]) for q in ranked) / len(ranked)
    ours["ndcg@10"] = sum(ndcg_at_k(dedupe(ranked[q]), evidence[q], 10) for q in ranked) / len(ranked)
    assert 0 < ours["recall@10"] < ours["recall@50"] < 1  # the inputs are not trivial
    theirs = ranx_means(ranked, evidence)
    assert theirs.keys() == ours.keys()
    for name, value in ours.items():
        assert theirs[name] == pytest.approx(value, abs=1e-9), name
