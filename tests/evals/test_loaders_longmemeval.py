from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest

from evals.loaders.longmemeval import DEFAULT_PATH, _read, load_longmemeval, parse_date, raw_question_date
from evals.model import Dataset


@pytest.fixture(scope="module")
def lme() -> Dataset:
    return load_longmemeval()


def test_counts(lme: Dataset) -> None:
    assert len(lme.questions) == 500
    assert len(lme.conversations) == 500
    assert Counter(q.category for q in lme.questions) == {
        "multi-session": 133,
        "temporal-reasoning": 133,
        "knowledge-update": 78,
        "single-session-user": 70,
        "single-session-assistant": 56,
        "single-session-preference": 30,
    }
    assert sum(not q.answerable for q in lme.questions) == 30
    assert sum(len(c.turns) for c in lme.conversations) == 10960


def test_evidence_is_has_answer_turns(lme: Dataset) -> None:
    # 21 questions (all abstention questions) mark no turn with has_answer
    no_evidence = [q for q in lme.questions if not q.evidence]
    assert len(no_evidence) == 21
    assert all(not q.answerable for q in no_evidence)
    for q in lme.questions:
        conv = lme.conversation(q.conversation_id)
        assert set(q.evidence) <= conv.turn_ids()
        assert {conv.turn_map()[t].session for t in q.evidence} <= set(q.evidence_sessions)


def test_knowledge_update_only() -> None:
    ku = load_longmemeval(question_types=("knowledge-update",))
    assert len(ku.questions) == 78
    assert {q.category for q in ku.questions} == {"knowledge-update"}


def test_parse_date() -> None:
    assert parse_date("2023/05/28 (Sun) 19:47") == datetime(2023, 5, 28, 19, 47, tzinfo=UTC)


def test_sessions_in_time_order_before_question(lme: Dataset) -> None:
    for q in lme.questions:
        conv = lme.conversation(q.conversation_id)
        dates = [s.date for s in conv.sessions]
        assert dates == sorted(dates)
        stamps = [t.timestamp for t in conv.turns]
        assert stamps == sorted(stamps)
        assert {t.speaker for t in conv.turns} <= {"user", "assistant"}
        assert q.asked_at > stamps[-1]


def test_question_moved_after_same_day_sessions(lme: Dataset) -> None:
    raw_dates = {str(r["question_id"]): raw_question_date(r) for r in _read(DEFAULT_PATH)}
    moved = [q for q in lme.questions if q.asked_at != raw_dates[q.question_id]]
    assert all(q.asked_at > raw_dates[q.question_id] for q in moved)
    assert Counter(q.category for q in moved) == {"temporal-reasoning": 41, "knowledge-update": 3}


def test_first_question_shape(lme: Dataset) -> None:
    q = lme.questions[0]
    assert q.question_id == "001be529"
    assert q.answer == "over a year"
    assert q.asked_at == datetime(2023, 5, 28, 19, 47, tzinfo=UTC)
