from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest

from engine.extract import ExtractResult, FactDraft
from engine.extract.rules import RuleExtractor
from evals.extraction_coverage import DraftCount, coverage, format_table, main
from evals.model import Conversation, Dataset, GoldFact, Session, Turn
from evals.synthetic import SyntheticConfig, generate

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def _dataset(lines: list[tuple[str, str, tuple[GoldFact, ...]]]) -> Dataset:
    turns = tuple(
        Turn(
            turn_id=f"c:S1:{i}",
            speaker=speaker,
            text=text,
            timestamp=T0 + timedelta(seconds=i),
            session="S1",
            index=i,
            facts=facts,
        )  # fmt: skip
        for i, (speaker, text, facts) in enumerate(lines)
    )
    conv = Conversation(conversation_id="c", speakers=("Alice", "assistant"),
                        sessions=(Session(session_id="S1", date=T0),), turns=turns)  # fmt: skip
    return Dataset(name="hand", conversations=(conv,), questions=())


HAND = _dataset(
    [
        ("Alice", "I live in Berlin.", (GoldFact(predicate="lives_in", value="Berlin"),)),
        ("assistant", "I live in Paris.", ()),  # assistant turns are never extracted
        ("Alice", "The weather has been awful all week.", ()),
        ("Alice", "I moved to Lisbon last month.", (GoldFact(predicate="lives_in", value="Lisbon"),)),
        (
            "Alice",
            "The new neighbours in Porto are lovely.",
            (GoldFact(predicate="lives_in", value="Porto"),),
        ),
        ("Alice", "I love jazz.", (GoldFact(predicate="likes", value="jazz", action="add"),)),
        (
            "Alice",
            "Honestly I don't like jazz anymore.",
            (GoldFact(predicate="likes", value="jazz", action="remove"),),
        ),
        ("Alice", "My budget is now $1,200.", (GoldFact(predicate="budget", value="1200"),)),
    ]
)


def test_hand_built_turns_are_counted_per_predicate_and_action() -> None:
    report = coverage(HAND)
    table = {(r.predicate, r.action): (r.caught, r.total) for r in report.rows}
    # Berlin and Lisbon are said plainly; "The new neighbours in Porto" is an inference the rules skip
    assert table == {
        ("lives_in", "set"): (2, 3),
        ("likes", "add"): (1, 1),
        ("likes", "remove"): (1, 1),
        ("budget", "set"): (1, 1),  # "$1,200" matches the gold "1200"
    }
    assert (report.caught, report.total) == (5, 6)
    assert [m.value for m in report.misses] == ["Porto"]
    assert report.extras == ()
    assert report.user_turns == 7  # the assistant turn is not one


class _Scripted(RuleExtractor):
    """The rule extractor plus scripted drafts: a wrong value on a chatter turn, a negation of a
    value stated earlier (true, not an extra) and one of a value never stated (an extra)."""

    def extract(
        self,
        text: str,
        *,
        subject: str = "ent:user",
        reference_time: datetime | None = None,
        subject_name: str = "User",
    ) -> ExtractResult:
        result = super().extract(
            text, subject=subject, reference_time=reference_time, subject_name=subject_name
        )

        def draft(predicate: str, name: str, negated: bool = False) -> FactDraft:
            return FactDraft(subject=subject, predicate=predicate, object=name, object_type="string",
                             object_name=name, negated=negated, text=name)  # fmt: skip

        if text.startswith("The weather"):
            result.facts.append(draft("lives_in", "Rome"))
        if text.startswith("I moved to Lisbon"):
            result.facts.append(draft("lives_in", "Berlin", negated=True))  # said before: fine
            result.facts.append(draft("lives_in", "Oslo", negated=True))  # never said: extra
            result.facts.append(draft("job_title", "pilot"))  # not a generator predicate: not judged
        return result


def test_extras_are_split_by_chatter_and_fact_turns() -> None:
    report = coverage(HAND, _Scripted())
    assert [(e.object_name, e.negated, e.on_chatter) for e in report.extras] == [
        ("Rome", False, True),
        ("Oslo", True, False),
    ]
    assert (report.caught, report.total) == (5, 6)  # extras never change what was caught
    text = format_table(report, show_misses=5, show_extras=5)
    assert "extras: 1 on fact turns, 1 on chatter turns" in text
    assert "miss lives_in/set 'Porto'" in text


def test_a_negated_draft_does_not_catch_an_added_fact() -> None:
    ds = _dataset(
        [("Alice", "I don't like jazz anymore.", (GoldFact(predicate="likes", value="jazz", action="add"),))]
    )
    report = coverage(ds)
    assert [(r.caught, r.total) for r in report.rows] == [(0, 1)]


@pytest.fixture(scope="module")
def tiny() -> Dataset:
    return generate(SyntheticConfig(seed=3, entities=3, days=90))


def test_tiny_generated_set_totals_match_its_gold(tiny: Dataset) -> None:
    report = coverage(tiny)
    gold = [(f.predicate, f.action) for c in tiny.conversations for t in c.turns for f in t.facts]
    assert report.total == len(gold)
    assert {(r.predicate, r.action) for r in report.rows} == set(gold)
    assert all(0 <= r.caught <= r.total for r in report.rows)
    assert coverage(SyntheticConfig(seed=3, entities=3, days=90)).rows == report.rows  # a config works too
    # the rules read nearly every phrasing the generator uses and nothing from its chatter
    assert report.caught / report.total >= 0.9
    assert [e for e in report.extras if e.on_chatter] == []


def test_cli_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seeds", "4", "--entities", "2"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["predicate", "action", "caught", "total", "rate"]
    assert "\nall " in out


def test_drafts_are_counted_per_predicate_with_or_without_gold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = coverage(HAND)
    assert {(c.predicate, c.drafts) for c in report.drafts} == {
        ("lives_in", 2),
        ("likes", 1),
        ("!likes", 1),
        ("budget", 1),
    }
    assert report.drafts[0] == DraftCount(predicate="lives_in", drafts=2)  # most frequent first
    assert report.fact_turns == 5
    path = tmp_path / "hand.json"
    path.write_bytes(msgspec.json.encode(HAND))
    assert main(["--dataset", str(path)]) == 0  # a dataset without gold (LoCoMo) is read the same way
    assert (
        "drafts: 5 from 5 of 7 user turns: lives_in 2, !likes 1, budget 1, likes 1" in capsys.readouterr().out
    )
