from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from evals.loaders.locomo import load_locomo, parse_date, parse_evidence
from evals.model import Dataset


@pytest.fixture(scope="module")
def locomo() -> Dataset:
    return load_locomo()


def test_counts(locomo: Dataset) -> None:
    assert len(locomo.conversations) == 10
    assert len(locomo.questions) == 1986
    assert Counter(q.category for q in locomo.questions) == {
        "single-hop": 841,
        "adversarial": 446,
        "temporal": 321,
        "multi-hop": 282,
        "open-domain": 96,
    }
    assert sum(len(c.turns) for c in locomo.conversations) == 5882
    assert sum(len(c.sessions) for c in locomo.conversations) == 272


def test_answerable_questions_with_evidence(locomo: Dataset) -> None:
    answerable = [q for q in locomo.questions if q.answerable]
    assert len(answerable) == 1986 - 446
    assert all(q.category != "adversarial" for q in answerable)
    # 1,535 questions of categories 1-4 have resolvable evidence
    assert sum(1 for q in answerable if q.evidence) == 1535


def test_dangling_evidence_is_dropped_and_counted(locomo: Dataset) -> None:
    assert locomo.dangling_evidence_count() == 3
    dangling = {q.question_id: q.dangling_evidence for q in locomo.questions if q.dangling_evidence}
    assert dangling == {"conv-42:q58": ("D10:19",), "conv-47:q38": ("D4:36",), "conv-50:q69": ("D30:05",)}
    for q in locomo.questions:
        known = locomo.conversation(q.conversation_id).turn_ids()
        assert set(q.evidence) <= known
        assert not set(q.dangling_evidence) & known


def test_parse_evidence() -> None:
    assert parse_evidence(["D1:3"]) == ["D1:3"]
    assert parse_evidence(["D8:6; D9:17", "D9:17"]) == ["D8:6", "D9:17"]
    assert parse_evidence(["D9:1 D4:4 D4:6"]) == ["D9:1", "D4:4", "D4:6"]
    assert parse_evidence(["D", "D:11:26"]) == []


def test_parse_date() -> None:
    assert parse_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_date("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert parse_date("10:04 am on 19 June, 2023") == datetime(2023, 6, 19, 10, 4, tzinfo=UTC)


def test_turns_dated_by_session_in_order(locomo: Dataset) -> None:
    conv = locomo.conversation("conv-26")
    first = conv.turns[0]
    assert (first.turn_id, first.speaker, first.session) == ("D1:1", "Caroline", "session_1")
    assert first.timestamp == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert conv.turns[1].timestamp == first.timestamp + timedelta(seconds=1)
    for c in locomo.conversations:
        stamps = [t.timestamp for t in c.turns]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
        assert all(t.timestamp.tzinfo is not None for t in c.turns)
        assert all(q.asked_at > stamps[-1] for q in locomo.questions_for(c.conversation_id))


def test_sessions_without_turns_are_skipped(locomo: Dataset) -> None:
    # conv-26 dates 35 sessions but only 19 hold turns
    assert len(locomo.conversation("conv-26").sessions) == 19


def test_caption_goes_into_memory_text(locomo: Dataset) -> None:
    with_caption = next(t for c in locomo.conversations for t in c.turns if t.caption)
    assert with_caption.memory_text() == (
        f"{with_caption.speaker}: {with_caption.text} [shares an image: {with_caption.caption}]"
    )
