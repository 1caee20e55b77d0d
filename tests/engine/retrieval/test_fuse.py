from typing import Any

import msgspec
import numpy as np
import pytest

from engine.models import Memory
from engine.retrieval.channels import ChannelHits, graph_seeds, hops_to_prior
from engine.retrieval.config import ResolvedRetrieval, resolve
from engine.retrieval.fuse import (
    BOOSTS,
    DEFAULT_CONFIDENCE,
    ENTITY_BOOST,
    LENGTH_CAP_CHARS,
    SEED_BOOST,
    SNIPPET_SCORE,
    fuse,
    reasons,
)
from engine.retrieval.normalize import NORMALIZERS
from engine.retrieval.options import RetrievalOptions, WeightsIn
from engine.retrieval.timeframe import window
from engine.storage.base import Hit

from .helpers import NOW, mem

OLD_SPEC_WEIGHTS = WeightsIn(semantic=0.45, bm25=0.25, graph_prior=0.15, recency_decay=0.1, confidence=0.05)


def _setup(**opts: Any) -> tuple[dict[str, Memory], ChannelHits, ResolvedRetrieval]:
    memories = {
        "a": mem("a", days_ago=0, confidence=1.0),
        "b": mem("b", days_ago=45, predicate="likes"),
        "c": mem("c", days_ago=90, confidence=0.2, subject="ent:bob"),
    }
    hits = ChannelHits(
        semantic=[Hit("a", 0.9), Hit("b", 0.5)],
        bm25=[Hit("b", 4.0), Hit("c", 2.0)],
        graph=[Hit("c", hops_to_prior(1))],
    )
    opts.setdefault("weights", OLD_SPEC_WEIGHTS)  # hand-computed values below use these
    cfg = resolve(RetrievalOptions(**opts))
    return memories, hits, cfg


def test_scores_hand_computed_minmax() -> None:
    memories, hits, cfg = _setup()
    f = fuse(["a", "b", "c"], memories, hits, cfg, reference=NOW)
    # a: semantic norm 1, bm25 miss, graph miss, recency 1, confidence 1
    assert f.score[0] == pytest.approx(0.45 * 1 + 0.1 * 1.0 + 0.05 * 1.0)
    # b: semantic norm 0 (min), bm25 norm 1, recency 0.5 (one half-life), confidence default 0.5
    assert f.score[1] == pytest.approx(0.25 * 1 + 0.1 * 0.5 + 0.05 * DEFAULT_CONFIDENCE)
    # c: bm25 norm 0, graph single hit -> 1, recency 0.25, confidence 0.2
    assert f.score[2] == pytest.approx(0.15 * 1 + 0.1 * 0.25 + 0.05 * 0.2)
    assert f.raw[2, 2] == 0.5  # 1 hop -> prior 1/2


@pytest.mark.parametrize("normalization", ["minmax", "zscore", "softmax"])
def test_contribs_sum_exactly_to_score(normalization: str) -> None:
    memories, hits, cfg = _setup(
        normalization=normalization, predicate_boosts={"likes": 0.3}, entity_boosts=["ent:bob"]
    )
    f = fuse(
        ["a", "b", "c", "snippet:1"],
        memories,
        hits,
        cfg,
        reference=NOW,
        seeded=frozenset({"a"}),
        snippets=frozenset({"snippet:1"}),
    )
    for i in range(4):
        comps = f.components(i)
        assert sum(c.contrib for c in comps.values()) == float(f.score[i])
        for name in ("semantic", "bm25", "graph_prior", "recency_decay", "confidence"):
            c = comps[name]
            assert c.contrib == c.norm * c.weight


def test_boosts_are_components() -> None:
    memories, hits, cfg = _setup(predicate_boosts={"likes": 0.3}, entity_boosts=["ent:bob"])
    f = fuse(
        ["a", "b", "c", "snippet:1"],
        memories,
        hits,
        cfg,
        reference=NOW,
        seeded=frozenset({"a"}),
        snippets=frozenset({"snippet:1"}),
    )
    assert f.components(0)["seed_boost"].contrib == SEED_BOOST
    assert f.components(1)["predicate_boost"].contrib == 0.3
    assert f.components(2)["entity_boost"].contrib == ENTITY_BOOST
    assert "predicate_boost" not in f.components(0)
    assert f.score[3] == SNIPPET_SCORE


def test_zscore_miss_never_beats_a_hit() -> None:
    memories, hits, cfg = _setup(normalization="zscore")
    f = fuse(["a", "b", "c"], memories, hits, cfg, reference=NOW)
    # semantic: a hit (z=+1), b hit (z=-1), c miss -> floor -1
    assert f.norm[:, 0].tolist() == pytest.approx([1.0, -1.0, -1.0])
    assert f.norm[2, 0] == f.norm[1, 0]


def test_recency_from_as_of_and_valid_from() -> None:
    from datetime import timedelta

    memories = {"a": mem("a", days_ago=100, valid_from=NOW - timedelta(days=10))}
    cfg = resolve(RetrievalOptions(recency_half_life_days=10))
    f = fuse(["a"], memories, ChannelHits(), cfg, reference=NOW)
    assert f.raw[0, 3] == pytest.approx(0.5)
    f2 = fuse(["a"], memories, ChannelHits(), cfg, reference=NOW - timedelta(days=20))
    assert f2.raw[0, 3] == 1.0  # not yet valid relative to the reference: age clamps at 0


def test_graph_seeds() -> None:
    seeds = graph_seeds(
        "ent:alice", ["ent:acme"], ["Did Bob visit Paris with Alice? The ent:carol_x note.", "What"]
    )
    assert seeds == ["ent:acme", "ent:carol_x", "ent:bob", "ent:paris"]  # the scope entity is not a seed


@pytest.mark.parametrize("normalization", sorted(NORMALIZERS))
def test_reusing_a_first_fusion_equals_fusing_the_longer_list_afresh(normalization: str) -> None:
    """The second fusion (conversation context) reuses the first one's rows: every array it returns
    equals a full `fuse` of the extended list, to the last bit."""
    memories, hits, cfg = _setup(
        normalization=normalization, predicate_boosts={"likes": 0.3}, entity_boosts=["ent:bob"]
    )
    memories |= {"d": mem("d", days_ago=3, confidence=0.9), "e": mem("e", days_ago=400, predicate="likes")}
    context = {"a": (0.05, 0.0, 0.0), "d": (0.2, 0.1, 0.1), "e": (0.0, 0.3, 0.0)}
    kwargs: dict[str, Any] = {
        "reference": NOW,
        "seeded": frozenset({"e"}),
        "snippets": frozenset({"snippet:1"}),
    }
    first = fuse(["a", "b", "c", "snippet:1"], memories, hits, cfg, **kwargs)
    # a neighbour that became a graph hit after the first fusion (spoken by a seed entity): the
    # graph channel is normalized over one more hit, for the first rows too
    speaker = msgspec.structs.replace(hits, graph=[*hits.graph, Hit("d", 1.0)])
    for added, now in ((["d", "e"], hits), (["d", "e"], speaker), (["e", "d"], speaker), ([], hits)):
        got = fuse([*first.ids, *added], memories, now, cfg, context=context, reuse=first, **kwargs)
        want = fuse([*first.ids, *added], memories, now, cfg, context=context, **kwargs)
        assert got.ids == want.ids
        for name in ("raw", "norm", "weights", "contrib", "boosts", "score", "hit"):
            assert np.array_equal(getattr(got, name), getattr(want, name)), name
    got = fuse([*first.ids, "d"], memories, speaker, cfg, context=context, reuse=first, **kwargs)
    assert got.hit[-1, 2] and got.raw[-1, 2] == 1.0


def _events(*texts: str) -> dict[str, Memory]:
    return {f"e{i}": mem(f"e{i}", text, type="event", days_ago=1) for i, text in enumerate(texts)}


def test_length_prior_lifts_the_longer_of_equal_event_matches() -> None:
    long_turn = "Melanie: I painted a sunrise over the lake last week, my first oil painting in years."
    memories = _events("Caroline: Wow!", long_turn, "x" * 250, "y" * 400)
    memories["n"] = mem("n", "a note that is not a turn")
    ids = [*memories]
    hits = ChannelHits(bm25=[Hit(mid, 1.0) for mid in ids])  # every candidate matches alike
    col = BOOSTS.index("length_prior")
    off = fuse(ids, memories, hits, resolve(RetrievalOptions(length_weight=0.0)), reference=NOW)
    assert not off.boosts[:, col].any()
    f = fuse(ids, memories, hits, resolve(RetrievalOptions(length_weight=0.06)), reference=NOW)
    prior = f.boosts[:, col]
    assert prior[0] < 0 < prior[1] and f.score[0] < f.score[1]
    assert prior[2] == prior[3]  # past LENGTH_CAP_CHARS length counts no more
    assert prior[4] == 0.0  # only events
    assert abs(prior[:4].sum()) < 1e-12  # centred over the events: they are not lifted as a whole
    logs = np.log([len(memories["e0"].text), len(long_turn), LENGTH_CAP_CHARS, LENGTH_CAP_CHARS])
    assert prior[1] - prior[0] == pytest.approx(0.06 * (logs[1] - logs[0]))
    for i in range(len(ids)):
        assert sum(c.contrib for c in f.components(i).values()) == float(f.score[i])
    assert "shorter than most candidate turns" in reasons(f, 0, pinned=False, seeded=False)
    assert "longer than most candidate turns" in reasons(f, 1, pinned=False, seeded=False)


def test_reuse_recentres_the_length_prior_over_the_added_events() -> None:
    memories = _events("A: ok", "B: I moved to Denver in March for the new job.", "A: " + "z" * 90, "B: yes")
    hits = ChannelHits(semantic=[Hit("e0", 0.9), Hit("e1", 0.6)])
    cfg = resolve(RetrievalOptions(length_weight=0.1))
    first = fuse(["e0", "e1"], memories, hits, cfg, reference=NOW)
    context = {"e2": (0.1, 0.0, 0.0), "e3": (0.05, 0.0, 0.1)}
    got = fuse([*first.ids, "e2", "e3"], memories, hits, cfg, reference=NOW, context=context, reuse=first)
    want = fuse(["e0", "e1", "e2", "e3"], memories, hits, cfg, reference=NOW, context=context)
    for name in ("boosts", "score"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert got.boosts[0, BOOSTS.index("length_prior")] != first.boosts[0, BOOSTS.index("length_prior")]


def test_the_time_boost_lifts_the_memories_of_the_time_the_question_points_to() -> None:
    memories = {
        "ten": mem("ten", "I bought a smoker for the barbecue", type="event", days_ago=10),
        "forty": mem("forty", "I bought a smoker for the barbecue", type="event", days_ago=40),
        "note": mem("note", "User owns a smoker", days_ago=11),  # any type of memory
    }
    ids = [*memories]
    hits = ChannelHits(bm25=[Hit(mid, 1.0) for mid in ids])
    cfg = resolve(RetrievalOptions())
    span = window("What did I buy 10 days ago?", NOW)
    assert span is not None
    col = BOOSTS.index("time_boost")
    f = fuse(ids, memories, hits, cfg, reference=NOW, window=span)
    assert f.boosts[:, col].tolist() == [cfg.time_weight, 0.0, cfg.time_weight] and cfg.time_weight == 0.2
    for i in range(len(ids)):
        assert sum(c.contrib for c in f.components(i).values()) == float(f.score[i])
    assert "from the time the question points to" in reasons(f, 0, pinned=False, seeded=False)
    off = fuse(ids, memories, hits, resolve(RetrievalOptions(time_weight=0.0)), reference=NOW, window=span)
    assert not off.boosts[:, col].any()
    assert f.score[0] - f.score[1] == pytest.approx(off.score[0] - off.score[1] + cfg.time_weight)
    assert not fuse(ids, memories, hits, cfg, reference=NOW).boosts[:, col].any()  # no window


@pytest.mark.parametrize("context", [0.15000000000000002, 0.2])
def test_an_event_that_ties_a_memory_of_another_type_is_capped_alike_whatever_the_float_noise(
    context: float,
) -> None:
    """The cap compares the event's score without its context boosts, a difference whose last bits fall
    below the tie for one boost and above it for the other: a tie is a tie either way (it went with the
    clock, so the same read ranked two ways)."""
    from engine.retrieval.fuse import NEIGHBOR, _cap_context_boosts

    direct = 0.1
    assert ((direct + 0.15000000000000002) - 0.15000000000000002 < direct) and ((direct + 0.2) - 0.2 > direct)
    memories = {"n": mem("n", "Alice likes green tea"), "e": mem("e", "Alice likes green tea", type="event")}
    boosts = np.zeros((2, len(BOOSTS)))
    boosts[1, NEIGHBOR] = context
    _cap_context_boosts(["n", "e"], memories, np.array([direct, direct + context]), boosts)
    assert boosts[1, NEIGHBOR] == context  # it does not beat the note alone, nor does the note beat it
