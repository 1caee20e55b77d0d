import numpy as np

from engine.retrieval.diversity import diversify, source_of
from engine.retrieval.rerank import mmr

from .helpers import mem


def test_source_of_order() -> None:
    assert source_of(mem("a", provenance={"source_turn": "mem_t"}, metadata={"source": "x"})) == "mem_t"
    assert source_of(mem("a", metadata={"document_id": "doc1"})) == "doc1"
    assert source_of(mem("a")) is None


def test_clamps_by_predicate_and_source_and_keeps_pinned() -> None:
    memories = {
        "p1": mem("p1", predicate="likes"),
        "p2": mem("p2", predicate="likes"),
        "p3": mem("p3", predicate="likes"),
        "s1": mem("s1", metadata={"source": "doc"}),
        "s2": mem("s2", metadata={"source": "doc"}),
        "s3": mem("s3", metadata={"source": "doc"}),
    }
    ranked = ["p1", "p2", "p3", "s1", "s2", "s3", "snippet:1"]
    out = diversify(ranked, memories, max_per_predicate=2, max_per_source=1, pinned={"s3"})
    assert out.kept == ["p1", "p2", "s1", "s3", "snippet:1"]
    assert (out.clamped_by_predicate, out.clamped_by_source) == (1, 1)


def test_mmr_prefers_a_different_second_item() -> None:
    v = np.eye(3, dtype=np.float32)
    near = np.array([1.0, 0.01, 0.0], dtype=np.float32) / np.linalg.norm([1.0, 0.01, 0.0])
    vectors = [v[0], near.astype(np.float32), v[1], v[2]]
    scores = np.array([1.0, 0.99, 0.98, 0.0])
    # relevance (min-max) = [1, .99, .98, 0]; step 2: item 1 = .7*.99 - .3*~1 = .393 < item 2 = .7*.98
    assert mmr(scores, vectors) == [0, 2, 1, 3]
    # lambda 1: pure relevance
    assert mmr(scores, vectors, lam=1.0) == [0, 1, 2, 3]


def test_mmr_without_vectors_is_score_order() -> None:
    assert mmr(np.array([0.1, 0.3, 0.2]), [None, None, None]) == [1, 2, 0]
    assert sorted(mmr(np.array([0.5, 0.5]), [np.ones(2, np.float32), None])) == [0, 1]


def _mmr_reference(scores: np.ndarray, vectors: list[np.ndarray | None], lam: float = 0.7) -> list[int]:
    """MMR as written in the module docstring, one candidate at a time."""
    lo, hi = float(scores.min()), float(scores.max())
    rel = (scores - lo) / (hi - lo) if hi > lo else np.ones_like(scores)
    picked: list[int] = []
    while len(picked) < len(scores):
        best, best_value = -1, -np.inf
        for i in range(len(scores)):
            if i in picked:
                continue
            sim = max(
                (
                    float(vectors[i] @ vectors[j])  # type: ignore[operator]
                    for j in picked
                    if vectors[i] is not None and vectors[j] is not None
                ),
                default=0.0,
            )
            value = lam * rel[i] - (1 - lam) * max(sim, 0.0)
            if value > best_value:
                best, best_value = i, value
        picked.append(best)
    return picked


def test_mmr_matches_the_reference_and_picks_cut_it_short() -> None:
    rng = np.random.default_rng(7)
    for n in (2, 5, 40):
        scores = rng.random(n)
        raw = rng.standard_normal((n, 8)).astype(np.float32)
        vectors: list[np.ndarray | None] = [v / np.linalg.norm(v) for v in raw]
        vectors[n // 2] = None  # a candidate without a vector
        full = mmr(scores, vectors)
        assert full == _mmr_reference(scores, vectors)
        cut = mmr(scores, vectors, picks=n // 2)
        rest = [i for i in np.argsort(-scores, kind="stable").tolist() if i not in full[: n // 2]]
        assert cut == full[: n // 2] + rest  # the chosen places, then the others by score
