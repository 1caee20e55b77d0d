from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from evals.model import Conversation, Dataset, Question, Session, Turn, decode_dataset, encode_dataset

T = datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=UTC)


def _dataset() -> Dataset:
    convs = tuple(
        Conversation(
            conversation_id=f"c{i}",
            speakers=("A", "B"),
            sessions=(Session(session_id="s1", date=T),),
            turns=(Turn(turn_id="t1", speaker="A", text="hello there", timestamp=T, session="s1"),),
        )
        for i in range(3)
    )
    questions = tuple(
        Question(
            question_id=f"c{i}:q",
            conversation_id=f"c{i}",
            text="?",
            answer=None,
            evidence=("t1",),
            asked_at=T,
            category="x",
            dangling_evidence=("t9",) if i == 2 else (),
        )
        for i in range(3)
    )
    return Dataset(name="d", conversations=convs, questions=questions)


def test_round_trip() -> None:
    dataset = _dataset()
    assert decode_dataset(encode_dataset(dataset)) == dataset


def test_naive_datetimes_are_rejected() -> None:
    raw = msgspec.json.decode(encode_dataset(_dataset()))
    raw["questions"][0]["asked_at"] = "2024-01-02T03:04:05"
    with pytest.raises(msgspec.ValidationError):
        decode_dataset(msgspec.json.encode(raw))


def test_subset_and_limit_split_by_conversation() -> None:
    dataset = _dataset()
    sub = dataset.subset(["c0", "c2"])
    assert [c.conversation_id for c in sub.conversations] == ["c0", "c2"]
    assert [q.question_id for q in sub.questions] == ["c0:q", "c2:q"]
    assert [c.conversation_id for c in dataset.limit(1).conversations] == ["c0"]
    assert dataset.dangling_evidence_count() == 1 and sub.limit(1).dangling_evidence_count() == 0
    assert len(dataset.conversations) == 3  # not mutated


def test_memory_text() -> None:
    turn = Turn(
        turn_id="t", speaker="Mel", text="Look!", timestamp=T, session="s", caption="a dog on a beach"
    )
    assert turn.memory_text() == "Mel: Look! [shares an image: a dog on a beach]"
