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
