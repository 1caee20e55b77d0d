from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from evals.loaders import load_dataset
from evals.model import Dataset, GoldFact, Turn
from evals.synthetic import MULTI_VALUED, SINGLE_VALUED, SyntheticConfig, generate, values_at, write_synthetic


@pytest.fixture(scope="module")
def synthetic() -> Dataset:
    return generate(SyntheticConfig(seed=3, entities=12))


def test_same_seed_same_file(tmp_path: Path) -> None:
    a = write_synthetic(tmp_path / "a.json", SyntheticConfig(seed=11, entities=4))
    b = write_synthetic(tmp_path / "b.json", SyntheticConfig(seed=11, entities=4))
    assert a.read_bytes() == b.read_bytes()


def test_different_seed_different_file(tmp_path: Path) -> None:
    a = write_synthetic(tmp_path / "a.json", SyntheticConfig(seed=11, entities=4))
    b = write_synthetic(tmp_path / "b.json", SyntheticConfig(seed=12, entities=4))
    assert a.read_bytes() != b.read_bytes()


def test_file_round_trips_through_the_loader(tmp_path: Path) -> None:
    config = SyntheticConfig(seed=5, entities=3)
    path = write_synthetic(tmp_path / "s.json", config)
    assert load_dataset(str(path)) == generate(config)


def test_shape(synthetic: Dataset) -> None:
    assert len(synthetic.conversations) == 12
    assert len(synthetic.questions) == 12 * 8
    turn_ids = [t.turn_id for c in synthetic.conversations for t in c.turns]
    assert len(turn_ids) == len(set(turn_ids))
    for conv in synthetic.conversations:
        stamps = [t.timestamp for t in conv.turns]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
        assert {t.session for t in conv.turns} == {s.session_id for s in conv.sessions}
        user_facts = [f for t in conv.turns if t.speaker == conv.speakers[0] for f in t.facts]
        assert {f.predicate for f in user_facts} >= {"lives_in", "works_at", "budget", "age", "partner"}
        assert all(not t.facts for t in conv.turns if t.speaker == "assistant")
        chatter = [t for t in conv.turns if not t.facts]
        assert len(chatter) > len(conv.turns) / 3


def test_probe_gold_is_latest_value_before_probe(synthetic: Dataset) -> None:
    for q in synthetic.questions:
        conv = synthetic.conversation(q.conversation_id)
        assert q.predicate in SINGLE_VALUED + MULTI_VALUED
        assert q.category == q.predicate
        earlier = [t for t in conv.turns if t.timestamp < q.asked_at]
        assert all(t.timestamp != q.asked_at for t in conv.turns)
        stated = [(t.timestamp, f) for t in earlier for f in t.facts if f.predicate == q.predicate]
        if q.predicate in SINGLE_VALUED:
            latest = max(stated, key=lambda x: x[0])[1].value
            assert q.current_values == (latest,)
            assert set(q.stale_values) == {f.value for _, f in stated} - {latest}
        else:
            added = {f.value for _, f in stated if f.action == "add"}
            removed = {f.value for _, f in stated if f.action == "remove"}
            assert set(q.current_values) == added - removed
            assert set(q.stale_values) == removed
        assert not set(q.current_values) & set(q.stale_values)
        assert q.answerable == bool(q.current_values)
        # evidence: the turns before the probe that stated a current value
        for tid in q.evidence:
            turn = conv.turn_map()[tid]
            assert turn.timestamp < q.asked_at
            assert any(f.value in q.current_values for f in turn.facts)


def test_probes_exercise_supersession(synthetic: Dataset) -> None:
    with_stale = [q for q in synthetic.questions if q.stale_values]
    assert len(with_stale) > len(synthetic.questions) / 3
    mid = [
        q
        for q in synthetic.questions
        if q.asked_at < synthetic.conversation(q.conversation_id).turns[-1].timestamp
    ]
    assert mid, "some probes are asked in the middle of the timeline"


def test_values_by_hand() -> None:
    t0 = generate(SyntheticConfig(seed=0, entities=1)).conversations[0].turns[0].timestamp

    def turn(i: int, *facts: GoldFact) -> Turn:
        return Turn(
            turn_id=str(i), speaker="u", text="x", timestamp=t0 + timedelta(days=i), session="S", facts=facts
        )

    turns = [
        turn(0, GoldFact(predicate="lives_in", value="Oslo")),
        turn(1, GoldFact(predicate="lives_in", value="Lyon")),
        turn(2, GoldFact(predicate="likes", value="jazz", action="add")),
        turn(3, GoldFact(predicate="likes", value="chess", action="add")),
        turn(4, GoldFact(predicate="likes", value="jazz", action="remove")),
        turn(5, GoldFact(predicate="lives_in", value="Porto")),
    ]
    assert values_at(turns, "lives_in", t0 + timedelta(hours=1)) == (["Oslo"], [])
    assert values_at(turns, "lives_in", t0 + timedelta(days=1)) == (["Oslo"], [])  # strictly before
    assert values_at(turns, "lives_in", t0 + timedelta(days=2)) == (["Lyon"], ["Oslo"])
    assert values_at(turns, "lives_in", t0 + timedelta(days=9)) == (["Porto"], ["Oslo", "Lyon"])
    assert values_at(turns, "likes", t0 + timedelta(days=4)) == (["jazz", "chess"], [])
    assert values_at(turns, "likes", t0 + timedelta(days=9)) == (["chess"], ["jazz"])


def test_phrasings_vary(synthetic: Dataset) -> None:
    moves = {
        t.text.replace(f.value, "{v}")
        for c in synthetic.conversations
        for t in c.turns
        for f in t.facts
        if f.predicate == "lives_in"
    }
    assert len(moves) >= 6
