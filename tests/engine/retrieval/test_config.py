import msgspec
import pytest

from engine.errors import InvalidInput
from engine.retrieval.config import ANCHORS, MIN_TOP_K, renormalize, resolve, without_semantic
from engine.retrieval.options import Expand, Rerank, RetrievalOptions, WeightsIn
from engine.retrieval.presets import Weights
from loci.wire.tuning import DEFAULTS


def test_balanced_defaults() -> None:
    cfg = resolve(RetrievalOptions())
    assert cfg.preset == "balanced" and cfg.weights == Weights() and not cfg.weights_renormalized
    assert (cfg.top_k, cfg.depth, cfg.recency_half_life_days, cfg.rerank) == (100, 2, 45, False)
    assert (cfg.neighbors, cfg.neighbor_weight, cfg.day_weight) == (2, 0.35, 0.2)


def _depth(lines: int | None) -> tuple[int, int]:
    cfg = resolve(RetrievalOptions(), lines=lines)
    return cfg.top_k, cfg.anchors


def test_a_short_context_fetches_fewer_hits_per_channel_and_fewer_anchors() -> None:
    # the API's default return limits (6 events, 12 facts): 4 hits per line, anchors in proportion
    assert _depth(18) == (72, 58)
    assert _depth(212) == (100, ANCHORS)
    assert _depth(1) == (MIN_TOP_K, 19)  # never below the spec's default top_k
    assert _depth(None) == (100, ANCHORS)


def test_an_explicit_or_small_top_k_is_not_fitted_to_the_lines() -> None:
    cfg = resolve(RetrievalOptions(top_k=100), lines=18)
    assert (cfg.top_k, cfg.anchors) == (100, ANCHORS)
    fast = resolve(RetrievalOptions(preset="fast"), lines=18)  # its top_k 12 is already below the fit
    assert (fast.top_k, fast.anchors) == (12, ANCHORS)


def test_rerank_lambda_defaults_to_the_preset_and_is_read_from_json() -> None:
    assert resolve(RetrievalOptions()).rerank_lambda == 0.7
    cfg = resolve(RetrievalOptions(rerank=Rerank(enable=True, lambda_=0.8)))
    assert (cfg.rerank, cfg.rerank_lambda) == (True, 0.8)
    opts = msgspec.json.decode(b'{"rerank": {"enable": true, "lambda": 0.9}}', type=RetrievalOptions)
    assert resolve(opts).rerank_lambda == 0.9
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"rerank": {"lambda": 1.5}}', type=RetrievalOptions)


def test_length_weight_defaults_to_the_preset_and_is_read_from_json() -> None:
    assert resolve(RetrievalOptions()).length_weight == DEFAULTS.length_weight
    assert resolve(msgspec.json.decode(b'{"length_weight": 0.1}', type=RetrievalOptions)).length_weight == 0.1
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"length_weight": -0.1}', type=RetrievalOptions)


def test_context_max_chars_defaults_to_the_preset_and_is_read_from_json() -> None:
    assert resolve(RetrievalOptions()).context_max_chars == DEFAULTS.context_max_chars > 0
    opts = msgspec.json.decode(b'{"expand": {"max_chars": 0}}', type=RetrievalOptions)
    assert resolve(opts).context_max_chars == 0
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"expand": {"max_chars": -1}}', type=RetrievalOptions)


def test_expand_options_override_preset() -> None:
    cfg = resolve(RetrievalOptions(expand=Expand(neighbors=0, day_weight=0.5)))
    assert (cfg.neighbors, cfg.neighbor_weight, cfg.day_weight) == (0, 0.35, 0.5)


def test_explicit_values_override_preset() -> None:
    cfg = resolve(RetrievalOptions(preset="fast", top_k=7, depth=1, recency_half_life_days=3))
    assert (cfg.top_k, cfg.depth, cfg.recency_half_life_days) == (7, 1, 3)
    assert cfg.weights.graph_prior == 0.0  # still the preset's weights


def test_a_value_that_is_set_is_never_read_as_unset() -> None:
    """A half-life or top_k of 0 (the wire refuses both) ran the preset's silently: `resolve` tells
    unset (None) from set, so a 0 that slipped past the caller's check does not pass for the default."""
    cfg = resolve(RetrievalOptions(recency_half_life_days=0, top_k=0))
    assert (cfg.recency_half_life_days, cfg.top_k) == (0, 0)


def test_partial_weights_fill_from_preset_and_renormalize() -> None:
    cfg = resolve(RetrievalOptions(weights=WeightsIn(semantic=0.95)))
    base = Weights()
    total = 0.95 + base.bm25 + base.graph_prior + base.recency_decay + base.confidence
    assert cfg.weights_renormalized
    assert cfg.weights.semantic == pytest.approx(0.95 / total)
    assert cfg.weights.bm25 == pytest.approx(base.bm25 / total)
    assert cfg.weights.total() == pytest.approx(1.0)


def test_weights_summing_to_one_are_kept() -> None:
    w = WeightsIn(semantic=0.5, bm25=0.5, graph_prior=0, recency_decay=0, confidence=0)
    cfg = resolve(RetrievalOptions(weights=w))
    assert not cfg.weights_renormalized and cfg.weights.semantic == 0.5


def test_all_zero_weights_are_invalid() -> None:
    w = WeightsIn(semantic=0, bm25=0, graph_prior=0, recency_decay=0, confidence=0)
    with pytest.raises(InvalidInput) as info:
        resolve(RetrievalOptions(weights=w))
    assert info.value.field == "retrieval.weights"


def test_renormalize_hand_computed() -> None:
    w, changed = renormalize(Weights(semantic=2, bm25=1, graph_prior=1, recency_decay=0, confidence=0))
    assert changed and (w.semantic, w.bm25, w.graph_prior) == (2 / 4, 1 / 4, 1 / 4)


def test_without_semantic() -> None:
    cfg = without_semantic(resolve(RetrievalOptions()))
    assert cfg.weights.semantic == 0.0 and cfg.weights_renormalized
    base = Weights()
    assert cfg.weights.bm25 == pytest.approx(base.bm25 / (1.0 - base.semantic))
    assert cfg.weights.total() == pytest.approx(1.0)
