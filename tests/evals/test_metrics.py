from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from evals.metrics import (
    ContextFact,
    ContextLine,
    QuestionRecord,
    dedupe,
    estimate_tokens,
    latency_table,
    lines_with_turns,
    metrics_frame,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
    score,
    summarize,
    supersession_outcome,
    turn_needles,
    value_in_text,
)

T = datetime(2024, 6, 1, tzinfo=UTC)


def test_recall_at_k() -> None:
    ranked = ["a", "x", "b", "y", "z", "c"]
    assert recall_at_k(ranked, {"a", "b", "c"}, 1) == 1 / 3
    assert recall_at_k(ranked, {"a", "b", "c"}, 5) == 2 / 3
    assert recall_at_k(ranked, {"a", "b", "c"}, 50) == 3 / 3
    assert recall_at_k([], {"a"}, 5) == 0.0
    with pytest.raises(ValueError):
        recall_at_k(ranked, set(), 5)


def test_reciprocal_rank() -> None:
    assert reciprocal_rank(["x", "y", "a", "b"], {"a", "b"}) == 1 / 3
    assert reciprocal_rank(["a"], {"a"}) == 1.0
    assert reciprocal_rank(["x", "y"], {"a"}) == 0.0


def test_ndcg() -> None:
    # relevant at ranks 2 and 4, two relevant ids in total
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 / math.log2(2) + 1 / math.log2(3))
    assert ndcg_at_k(["x", "a", "y", "b"], {"a", "b"}, 10) == pytest.approx(expected)
    assert ndcg_at_k(["a", "b"], {"a", "b"}, 10) == pytest.approx(1.0)
    # a relevant id past the cut-off does not count
    assert ndcg_at_k(["x", "y", "a"], {"a"}, 2) == 0.0
    # more relevant ids than k: the ideal is capped at k
    assert ndcg_at_k(["a", "b"], {"a", "b", "c"}, 2) == pytest.approx(1.0)


def test_dedupe_keeps_first_rank_and_does_not_mutate() -> None:
    ids = ["a", "b", "a", "c", "b"]
    assert dedupe(ids) == ["a", "b", "c"]
    assert ids == ["a", "b", "a", "c", "b"]


def test_value_matching() -> None:
    assert value_in_text("1200", "Alice's budget is $1,200")
    assert value_in_text("800", "budget: 800 dollars")
    assert not value_in_text("80", "budget: 800 dollars")
    assert not value_in_text("35", "Celebrated my 35th birthday")
    assert value_in_text("Lisbon", "alice lives in LISBON.")
    assert value_in_text("guinea pig", "Alice has a guinea  pig")
    assert not value_in_text("cat", "allergic to cats")


def test_lines_with_turns() -> None:
    long_text = "I moved to Lisbon last month and the new flat is lovely"
    needles = {
        "D1:1": turn_needles(long_text, ["mem_01ABC"]),
        "D1:2": turn_needles("Hi!", ["mem_02XYZ"]),  # too short to match by text
    }
    assert needles["D1:2"] == ("mem_02XYZ",)
    lines = [
        "[mem_01ABC] Alice: I moved to Lisbon ...",
        "2024-05-01 Alice: i moved to lisbon last month and the new   flat is lovely",
        "Bob: Hi!",
        "[mem_02XYZ] Bob: Hi!",
    ]
    assert lines_with_turns(lines, needles) == [
        frozenset({"D1:1"}),
        frozenset({"D1:1"}),
        frozenset(),
        frozenset({"D1:2"}),
    ]


def test_estimate_tokens() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("abcdef", chars_per_token=3.0) == 2


def _fact(text: str, **kw: object) -> ContextFact:
    return ContextFact(text=text, **kw)  # type: ignore[arg-type]


def test_supersession_outcomes() -> None:
    facts = [
        _fact("Alice lives in Lisbon", predicate="lives_in"),
        _fact("Alice lives in Berlin", predicate="lives_in", status="superseded"),
        _fact("Alice was born in Oslo", predicate="born_in"),
    ]
    ok = supersession_outcome(["Lisbon"], ["Berlin"], facts, None, "lives_in")
    assert (ok.correct, ok.stale_leak, ok.stale_active, ok.false_supersession) == (True, True, False, False)
    # Oslo is stale for lives_in but only appears under another predicate
    other = supersession_outcome(["Lisbon"], ["Oslo"], facts, None, "lives_in")
    assert (other.stale_leak, other.stale_active) == (False, False)
    # the current value only in a superseded fact: wrong and a false supersession
    bad = supersession_outcome(["Berlin"], ["Lisbon"], facts, None, "lives_in")
    assert (bad.correct, bad.stale_active, bad.false_supersession) == (False, True, True)


def test_validity_interval_decides_with_as_of() -> None:
    superseded_later = _fact(
        "Alice works at Stripe",
        status="superseded",
        valid_from=datetime(2024, 1, 1, tzinfo=UTC),
        valid_to=datetime(2024, 9, 1, tzinfo=UTC),
    )
    assert superseded_later.active_at(T)
    assert not superseded_later.active_at(datetime(2024, 9, 1, tzinfo=UTC))
    assert not superseded_later.active_at(datetime(2023, 12, 31, tzinfo=UTC))
    assert superseded_later.active_at(None) is False
    outcome = supersession_outcome(["Stripe"], [], [superseded_later], T)
    assert outcome.correct and not outcome.false_supersession


def _record(**kw: object) -> QuestionRecord:
    base: dict[str, object] = {"question_id": "q", "conversation_id": "c", "category": "single-hop"}
    base.update(kw)
    return QuestionRecord(**base)  # type: ignore[arg-type]


def test_score_ranking_and_context() -> None:
    lines = (
        ContextLine(section="facts", text="f", tokens=10),
        ContextLine(section="recent_events", text="e1", tokens=30, turn_ids=("a",)),
        ContextLine(section="sources", text="s", tokens=60, turn_ids=("x", "c")),
    )
    rec = _record(evidence=("a", "b", "c"), ranked=("x", "a", "a", "y", "c"), lines=lines, budget=200)
    m = score(rec)
    assert m.recall_at_5 == 2 / 3  # ranked after dedupe: x a y c
    assert m.recall_at_50 == 2 / 3
    assert m.mrr == 1 / 2
    assert m.ndcg_at_10 == pytest.approx(
        (1 / math.log2(3) + 1 / math.log2(5)) / sum(1 / math.log2(i + 1) for i in (1, 2, 3))
    )
    assert m.recall_in_context == 2 / 3  # a and c
    assert m.context_tokens == 10 + 30 + 60
    assert m.evidence_tokens == 30 + 60
    assert m.evidence_token_share == (30 + 60) / (10 + 30 + 60)
    assert m.utilization == 100 / 200
    assert not m.overflow
    assert m.supersession_correct is None


def test_score_overflow_and_unanswerable() -> None:
    m = score(_record(answerable=False, evidence=("a",), ranked=("a",), context_tokens=1201, budget=1200))
    assert m.overflow and m.utilization == 1201 / 1200
    assert m.recall_at_5 is None and m.mrr is None and m.recall_in_context is None
    assert m.evidence_token_share is None


def test_score_supersession() -> None:
    rec = _record(
        category="lives_in",
        predicate="lives_in",
        as_of=T,
        current_values=("Lisbon",),
        stale_values=("Berlin",),
        facts=(_fact("Alice lives in Lisbon", predicate="lives_in"),),
    )
    m = score(rec)
    assert (m.supersession_correct, m.stale_leak, m.stale_active, m.false_supersession) == (
        True,
        False,
        False,
        False,
    )
    only_current = score(_record(current_values=("Lisbon",), facts=()))
    assert only_current.supersession_correct is False and only_current.stale_leak is None


def test_frame_and_summary() -> None:
    metrics = [
        score(_record(question_id="1", category="a", evidence=("t",), ranked=("t",), context_tokens=100)),
        score(_record(question_id="2", category="a", evidence=("t",), ranked=("x",), context_tokens=1300)),
        score(_record(question_id="3", category="b", answerable=False, context_tokens=600)),
    ]
    frame = metrics_frame(metrics)
    assert list(frame["question_id"]) == ["1", "2", "3"]
    summary = summarize(frame)
    assert list(summary.index) == ["a", "b", "all"]
    assert summary.loc["a", "recall_at_5"] == (1 + 0) / 2
    assert summary.loc["all", "recall_at_5"] == (1 + 0) / 2  # question 3 has no recall
    assert math.isnan(summary.loc["b", "recall_at_5"])
    assert summary.loc["all", "overflow_count"] == 1
    assert summary.loc["all", "utilization"] == pytest.approx((100 + 1300 + 600) / 1200 / 3)
    assert summary.loc["a", "n"] == 2 and summary.loc["all", "n_recall"] == 2


def test_latency_table() -> None:
    table = latency_table(
        [{"retrieve": 1.0, "render": 5.0}, {"retrieve": 2.0}, {"retrieve": 3.0}, {"retrieve": 4.0}]
    )
    # numpy linear interpolation on [1, 2, 3, 4]: p50 = 2.5, p95 = 3 + 0.85 * (4 - 3)
    assert table.loc["retrieve", "p50"] == 2.5
    assert table.loc["retrieve", "p95"] == pytest.approx(3.85)
    assert table.loc["retrieve", "n"] == 4
    assert table.loc["render", "p50"] == 5.0


def test_score_with_stored_facts() -> None:
    ended = datetime(2024, 5, 1, tzinfo=UTC)
    stored = (
        _fact(
            "User lives in Berlin",
            predicate="lives_in",
            status="superseded",
            valid_from=datetime(2024, 1, 1, tzinfo=UTC),
            valid_to=ended,
        ),
        _fact("User lives in Lisbon", predicate="lives_in", valid_from=ended),
    )
    base = {
        "category": "lives_in",
        "predicate": "lives_in",
        "as_of": T,
        "current_values": ("Lisbon",),
        "stale_values": ("Berlin",),
        "facts": (_fact("User lives in Lisbon", predicate="lives_in"),),
    }
    good = score(_record(**base, stored_facts=stored))
    assert (good.store_correct, good.store_stale_active, good.false_supersession) == (True, False, False)
    # the store holds nothing for the predicate: wrong, not unknown
    empty = score(_record(**base, stored_facts=()))
    assert empty.store_correct is False and empty.store_stale_active is False
    # no listing from the backend: unknown
    unknown = score(_record(**base))
    assert unknown.store_correct is None and unknown.store_stale_active is None
    # the current value was ended by mistake: a false supersession, judged on the store
    wrong = score(
        _record(**{**base, "current_values": ("Berlin",), "stale_values": ()}, stored_facts=stored[:1])
    )
    assert wrong.false_supersession is True and wrong.store_correct is False
