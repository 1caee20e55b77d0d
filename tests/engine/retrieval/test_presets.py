import re

import pytest

import loci.wire.tuning as tuning_mod
from engine.errors import UnknownName
from engine.retrieval.presets import PRESETS, Weights, get_preset


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_weights_sum_to_one(name: str) -> None:
    assert get_preset(name).weights.total() == pytest.approx(1.0, abs=1e-12)


def test_balanced_is_the_apis_documented_default() -> None:
    """With no preset and no weights a request runs the weights the API documents."""
    p = get_preset("balanced")
    assert (
        p.weights
        == Weights()
        == Weights(semantic=0.45, bm25=0.25, graph_prior=0.15, recency_decay=0.1, confidence=0.05)
    )
    assert (p.top_k, p.depth, p.recency_half_life_days, p.rerank) == (100, 2, 45, False)
    assert (p.neighbors, p.neighbor_weight, p.day_weight) == (2, 0.35, 0.2)


def test_documented_differences() -> None:
    fast, factual, recent, graphy = (get_preset(n) for n in ("fast", "factual", "recent", "graphy"))
    bal = get_preset("balanced")
    assert fast.depth == 0 and fast.weights.graph_prior == 0 and fast.top_k < bal.top_k and not fast.rerank
    assert factual.weights.bm25 > bal.weights.bm25 and factual.weights.confidence > bal.weights.confidence
    assert dict(factual.type_boosts)["fact"] > 0
    assert recent.weights.recency_decay > bal.weights.recency_decay
    assert recent.recency_half_life_days < bal.recency_half_life_days
    assert graphy.weights.graph_prior > bal.weights.graph_prior and graphy.depth == 2


def test_docstring_table_matches_data() -> None:
    doc = tuning_mod.__doc__ or ""
    rows = [line for line in doc.splitlines() if re.match(r"^\| [a-z]+ +\|", line) and "preset" not in line]
    assert len(rows) == len(PRESETS)
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        p = get_preset(cells[0])
        assert [float(c) for c in cells[1:6]] == list(p.weights.as_tuple())
        assert int(cells[6]) == p.top_k and int(cells[7]) == p.depth
        assert cells[8] == f"{p.recency_half_life_days} days"


def test_unknown_preset() -> None:
    with pytest.raises(UnknownName) as info:
        get_preset("turbo")
    assert info.value.field == "retrieval.preset" and "graphy" in info.value.message


def test_presets_are_frozen() -> None:
    with pytest.raises(AttributeError):
        get_preset("fast").top_k = 3  # type: ignore[misc]
