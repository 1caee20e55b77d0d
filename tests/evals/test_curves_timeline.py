from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec

from evals.curves import budget_curve
from evals.model import Conversation, GoldFact, Question, Session, Turn
from evals.replay import Answer, Loaded, ReplayConfig
from evals.timeline import gold_timeline, stored_timeline
from tests.evals._tiny import CountingBackend, tiny_dataset

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _turn(day: int, text: str, *facts: GoldFact) -> Turn:
    return Turn(
        turn_id=f"t{day}",
        speaker="Ann",
        text=text,
        timestamp=T0 + timedelta(days=day),
        session=f"s{day}",
        facts=facts,
    )


def _conv() -> Conversation:
    turns = (
        _turn(0, "I live in Berlin.", GoldFact(predicate="lives_in", value="Berlin")),
        _turn(1, "I have a dog.", GoldFact(predicate="has_pet", value="dog", action="add")),
        _turn(5, "I moved to Lisbon.", GoldFact(predicate="lives_in", value="Lisbon")),
        _turn(6, "Still in Lisbon, love it.", GoldFact(predicate="lives_in", value="Lisbon")),
        _turn(7, "I got a cat too.", GoldFact(predicate="has_pet", value="cat", action="add")),
        _turn(
            9, "Sadly I no longer have a dog.", GoldFact(predicate="has_pet", value="dog", action="remove")
        ),
        _turn(12, "Nice weather today."),
    )
    return Conversation(
        conversation_id="c",
        speakers=("Ann",),
        sessions=tuple(Session(session_id=t.session, date=t.timestamp) for t in turns),
        turns=turns,
    )


def test_gold_timeline_single_valued() -> None:
    t = gold_timeline(_conv(), "lives_in")
    assert list(t["value"]) == ["Berlin", "Lisbon"]
    assert list(t["start"]) == [T0, T0 + timedelta(days=5)]
    # Berlin ends when Lisbon starts; the repeat of Lisbon changes nothing; Lisbon is open to the horizon
    assert list(t["end"]) == [T0 + timedelta(days=5), T0 + timedelta(days=12)]
    assert list(t["open"]) == [False, True]


def test_gold_timeline_multi_valued() -> None:
    t = gold_timeline(_conv(), "has_pet")
    assert [(r.value, r.start, r.end, r.open) for r in t.itertuples()] == [
        ("dog", T0 + timedelta(days=1), T0 + timedelta(days=9), False),
        ("cat", T0 + timedelta(days=7), T0 + timedelta(days=12), True),
    ]


def test_stored_timeline_reads_the_engine_facts() -> None:
    t = stored_timeline(_conv(), "has_pet")
    assert set(t.columns) >= {"value", "start", "end", "open", "status"}
    assert all(t["start"] <= t["end"])


def test_budget_curve_rows_and_monotone_budget() -> None:
    data = tiny_dataset(entities=3)
    backend = CountingBackend(ReplayConfig(rank_depth=0))
    curve = budget_curve(data, presets=("balanced", "fast"), budgets=(256, 2400), backend=backend)
    assert backend.loads == [c.conversation_id for c in data.conversations]
    assert list(zip(curve["preset"], curve["budget"], strict=True)) == [
        ("balanced", 256),
        ("balanced", 2400),
        ("fast", 256),
        ("fast", 2400),
    ]
    assert (curve["overflow_count"] == 0).all()
    for _, group in curve.groupby("preset"):
        small, large = group.sort_values("budget")["recall_in_context"]
        assert large >= small
        assert group["n"].nunique() == 1
    assert curve["utilization"].between(0, 1).all()


def test_budget_curve_keeps_every_setting_of_the_base_config() -> None:
    data = tiny_dataset(entities=1)
    base = ReplayConfig(
        rank_depth=0, max_events=3, max_facts=2, tokenizer="cl100k_base", retrieval={"top_k": 7}
    )
    seen: list[ReplayConfig] = []

    class Recording(CountingBackend):
        def ask(self, loaded: Loaded, question: Question, config: ReplayConfig) -> Answer:
            seen.append(config)
            return super().ask(loaded, question, config)

    budget_curve(data, presets=("fast",), budgets=(600,), base=base, backend=Recording(base))
    expected = msgspec.structs.replace(base, preset="fast", budget=600, rank_depth=0)
    assert seen and all(c == expected for c in seen)


def test_stored_timeline_of_a_superseded_fact() -> None:
    turns = (
        _turn(0, "I work at Acme.", GoldFact(predicate="works_at", value="Acme")),
        _turn(
            10, "I switched jobs: Globex now instead of Acme.", GoldFact(predicate="works_at", value="Globex")
        ),
    )
    conv = Conversation(
        conversation_id="w",
        speakers=("Ann",),
        sessions=tuple(Session(session_id=t.session, date=t.timestamp) for t in turns),
        turns=turns,
    )
    gold = gold_timeline(conv, "works_at")
    stored = stored_timeline(conv, "works_at")
    assert list(gold["value"]) == ["Acme", "Globex"]
    # the rule extractor reads both turns; the first fact ends when the second starts
    assert [v.casefold() for v in stored["value"]] == ["acme", "globex"]
    assert list(stored["status"]) == ["superseded", "active"]
    assert list(stored["open"]) == [False, True]
    assert stored.loc[0, "end"] == T0 + timedelta(days=10)
