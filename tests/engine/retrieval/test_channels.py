"""The semantic channel's hits are the same on every backend: similarities rounded, near-equal ones in
one order (and one cut)."""

from __future__ import annotations

from engine.retrieval.channels import SEMANTIC_DECIMALS, same_on_every_backend
from engine.storage.base import Hit


def test_near_equal_similarities_keep_one_order_whatever_computed_them() -> None:
    tiny = 10.0 ** -(SEMANTIC_DECIMALS + 3)  # below the rounding: float32 sums of two implementations
    faiss_like = [Hit("mem_b", 0.5 + tiny), Hit("mem_a", 0.5), Hit("mem_c", 0.25)]
    pgvector_like = [Hit("mem_a", 0.5 + tiny), Hit("mem_b", 0.5), Hit("mem_c", 0.25)]
    expected = [Hit("mem_b", 0.5), Hit("mem_a", 0.5), Hit("mem_c", 0.25)]  # ties: the newer id first
    assert same_on_every_backend(faiss_like) == same_on_every_backend(pgvector_like) == expected
    assert same_on_every_backend([Hit("mem_x", 0.123456789)]) == [
        Hit("mem_x", round(0.123456789, SEMANTIC_DECIMALS))
    ]
