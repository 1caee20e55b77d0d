from __future__ import annotations

from datetime import UTC, datetime, timedelta

from evals.latest_evidence import latest_evidence, latest_evidence_table
from evals.metrics import ContextLine, QuestionRecord
from evals.model import Conversation, Dataset, Session, Turn

T0 = datetime(2024, 1, 1, tzinfo=UTC)
TIMES = {"old": T0, "new": T0 + timedelta(days=30), "same": T0}


def _rec(
    qid: str, evidence: tuple[str, ...], seen: tuple[str, ...], category: str = "knowledge-update"
) -> QuestionRecord:
    lines = tuple(ContextLine(section="sources", text=t, tokens=1, turn_ids=(t,)) for t in seen)
    return QuestionRecord(
        question_id=qid, conversation_id="c", category=category, evidence=evidence, lines=lines
    )


def test_latest_evidence_cases() -> None:
    both = latest_evidence(_rec("q", ("old", "new"), ("old", "new")), TIMES)
    assert both is not None and both.latest_in_context and not both.stale_only
    stale = latest_evidence(_rec("q", ("old", "new"), ("old",)), TIMES)
    assert stale is not None and not stale.latest_in_context and stale.stale_only
    none_seen = latest_evidence(_rec("q", ("new", "old"), ()), TIMES)
    assert none_seen is not None and not none_seen.latest_in_context and not none_seen.stale_only
    # evidence at one time only: not an update question
    assert latest_evidence(_rec("q", ("old", "same"), ("old",)), TIMES) is None


def test_table_rates_per_configuration() -> None:
    turns = tuple(
        Turn(turn_id=t, speaker="u", text=t, timestamp=when, session="s") for t, when in TIMES.items()
    )
    data = Dataset(
        name="d",
        conversations=(
            Conversation(
                conversation_id="c",
                speakers=("u",),
                sessions=(Session(session_id="s", date=T0),),
                turns=turns,
            ),
        ),
        questions=(),
    )
    records = {
        "a": [
            _rec("q1", ("old", "new"), ("new",)),
            _rec("q2", ("old", "new"), ("old",)),
            _rec("q3", ("old", "new"), ("new",), category="single-hop"),
        ],
        "b": [_rec("q1", ("old", "new"), ())],
    }
    table = latest_evidence_table(records, data)
    assert table.loc["a"].tolist() == [2, 1 / 2, 1 / 2]
    assert table.loc["b"].tolist() == [1, 0.0, 0.0]
    assert latest_evidence_table(records, data, categories=None).loc["a", "n"] == 3
