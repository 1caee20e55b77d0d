"""Supersession seen through evidence turns, for datasets without gold fact values (LongMemEval
`knowledge-update`: the evidence is an old value's turn and a newer value's turn).

For a question whose evidence turns have at least two distinct times, the newest evidence turn
holds the current value and the older ones hold superseded values:
- latest_in_context: the newest evidence turn reached the assembled context
- stale_only: some older evidence turn reached the context but the newest did not (the agent
  would read only the old value)

    latest_evidence_table({"chosen": records, ...}, dataset) -> DataFrame (one row per configuration)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import msgspec

from evals.metrics import QuestionRecord
from evals.model import Dataset


class LatestEvidence(msgspec.Struct, frozen=True, kw_only=True):
    question_id: str
    latest_in_context: bool
    stale_only: bool


def latest_evidence(record: QuestionRecord, turn_times: Mapping[str, Any]) -> LatestEvidence | None:
    """None when the question's evidence does not span two distinct times."""
    dated = [(turn_times[t], t) for t in record.evidence if t in turn_times]
    if len({when for when, _ in dated}) < 2:
        return None
    newest = max(dated)[1]
    in_context = {t for line in record.lines for t in line.turn_ids}
    older_seen = any(t in in_context for _, t in dated if t != newest)
    return LatestEvidence(
        question_id=record.question_id,
        latest_in_context=newest in in_context,
        stale_only=older_seen and newest not in in_context,
    )


#: question categories where old and new evidence mean an old and a new value
UPDATE_CATEGORIES: tuple[str, ...] = ("knowledge-update",)


def latest_evidence_table(
    records: Mapping[str, Sequence[QuestionRecord]],
    dataset: Dataset,
    categories: Collection[str] | None = UPDATE_CATEGORIES,
) -> Any:
    """Per configuration: n (questions of `categories`, None = all, with dated old and new
    evidence), latest_in_context and stale_only rates. Empty when no question qualifies."""
    import pandas as pd

    times: dict[str, dict[str, Any]] = {
        c.conversation_id: {t.turn_id: t.timestamp for t in c.turns} for c in dataset.conversations
    }
    rows = {}
    for name, recs in records.items():
        kept = [r for r in recs if categories is None or r.category in categories]
        found = [x for r in kept if (x := latest_evidence(r, times.get(r.conversation_id, {}))) is not None]
        if found:
            rows[name] = {
                "n": len(found),
                "latest_in_context": sum(x.latest_in_context for x in found) / len(found),
                "stale_only": sum(x.stale_only for x in found) / len(found),
            }
    return pd.DataFrame.from_dict(rows, orient="index", columns=["n", "latest_in_context", "stale_only"])


__all__: Sequence[str] = ("UPDATE_CATEGORIES", "LatestEvidence", "latest_evidence", "latest_evidence_table")
