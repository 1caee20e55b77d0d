"""Per-question metrics and their aggregation.

    QuestionRecord (what one assemble call produced, mapped back to turn ids)
        -> score(record) -> QuestionMetrics
        -> metrics_frame([...]) -> DataFrame -> summarize(frame, by="category")
    latency_table([record.stage_ms, ...]) -> DataFrame (p50/p95 per stage)

Ranking metrics use binary relevance (a turn is evidence or not) on the ranked turn ids
(`QuestionRecord.ranked`, duplicates removed, first rank kept):
- recall@k = |evidence ∩ ranked[:k]| / |evidence|
- MRR = 1 / rank of the first evidence turn (0 when none is ranked; no cut-off)
- nDCG@10 = Σ_{i≤10, ranked[i] ∈ evidence} 1/log2(i+1) / Σ_{i≤min(|evidence|,10)} 1/log2(i+1)
These are the definitions of `ranx` (recall@k, mrr, ndcg@k with the default Järvelin gains), and
`tests/evals/test_metrics_ranx.py` checks them against it. The per-question functions are ours
because ranx JIT-compiles with numba on first use in every process (numba caches only part of it),
too slow for per-question calls in tests and the eval gate.

Context: `recall_in_context` is the share of evidence turns found in the rendered lines (by memory
id, by the start of the turn's text, or for a fact line by its fact's source turn);
`recall_in_context_whole` is stricter: the turn's whole text (case and whitespace folded) is in a
line (or its memory id, or a fact line of it), so a line the budget cut short does not count; evidence
tokens are the tokens of the lines holding an evidence turn (the one-line summary counts whole).
`ranx_means` runs ranx itself for a report that wants it.

Questions that are not answerable or have no evidence turn get NaN (None) ranking metrics and are
left out of the means.

Supersession (synthetic probes and any question with `current_values`): with the probe's time
`as_of`, a fact is active when its validity interval holds `as_of` (or, without validity dates,
when its status is `active`).
- supersession_correct: every current value appears in an active fact
- stale_leak: a stale value appears in any fact of the context
- stale_active: a stale value appears in an active fact (the agent would take it as true)
- false_supersession: a current value appears only in facts that are not active
When the backend also reports the facts held in the store (`QuestionRecord.stored_facts`: every
fact of the probe's predicate, any status), three more separate the write path from retrieval:
- store_correct: every current value is in a fact of the store active at `as_of`
- store_stale_active: a stale value is in a fact of the store active at `as_of`
- false_supersession is then judged on the stored facts (a context never shows ended facts)
Values are matched as whole words, case-insensitively, ignoring `$` and thousands separators
("$1,200" matches "1200"). When a fact has a predicate and the question names one, only facts
of that predicate count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

RECALL_KS: tuple[int, ...] = (5, 10, 25, 50)


# --- ranking ---------------------------------------------------------------------------------
def dedupe(ids: Iterable[str]) -> list[str]:
    """Ids in first-seen order without repeats (several memories can map to one turn)."""
    return list(dict.fromkeys(ids))


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    if not relevant:
        raise ValueError("recall needs at least one relevant id")
    return len(set(ranked[:k]) & set(relevant)) / len(set(relevant))


def reciprocal_rank(ranked: Sequence[str], relevant: Collection[str]) -> float:
    for rank, item in enumerate(ranked, start=1):
        if item in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: Collection[str], k: int = 10) -> float:
    if not relevant:
        raise ValueError("nDCG needs at least one relevant id")
    dcg = sum(1.0 / math.log2(i + 1) for i, item in enumerate(ranked[:k], start=1) if item in relevant)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(set(relevant)), k) + 1))
    return dcg / ideal


# --- context contents ------------------------------------------------------------------------
_SPACE = re.compile(r"\s+")


def _fold(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def estimate_tokens(text: str, chars_per_token: float = 4.0) -> int:
    return math.ceil(len(text) / chars_per_token) if text else 0


def turn_needles(
    text: str, memory_ids: Iterable[str] = (), *, prefix_chars: int | None = 60, min_chars: int = 16
) -> tuple[str, ...]:
    """What identifies a turn inside rendered context: its memory ids, and the first
    `prefix_chars` characters (None: all) of its text when the text is long enough not to match by chance."""
    needles = [m for m in memory_ids if m]
    folded = _fold(text)
    if len(folded) >= min_chars:
        needles.append(folded[:prefix_chars])
    return tuple(needles)


def whole_turn_needles(text: str, memory_ids: Iterable[str] = (), *, min_chars: int = 16) -> tuple[str, ...]:
    """What shows a turn WHOLE inside rendered context: its memory ids, and its whole folded text when
    that is long enough not to match by chance."""
    return turn_needles(text, memory_ids, prefix_chars=None, min_chars=min_chars)


def lines_with_turns(lines: Sequence[str], needles: Mapping[str, Sequence[str]]) -> list[frozenset[str]]:
    """For each context line, the turn ids whose needles (see `turn_needles`) it contains."""
    folded_needles = {tid: [_fold(n) for n in ns] for tid, ns in needles.items()}
    out: list[frozenset[str]] = []
    for line in lines:
        folded = _fold(line)
        out.append(frozenset(tid for tid, ns in folded_needles.items() if any(n and n in folded for n in ns)))
    return out


class ContextLine(msgspec.Struct, frozen=True, kw_only=True):
    section: str  # facts | recent_events | sources | summary
    text: str
    tokens: int
    turn_ids: tuple[str, ...] = ()
    whole_turn_ids: tuple[str, ...] = ()  # the turns whose whole text is in the line


class ContextFact(msgspec.Struct, frozen=True, kw_only=True):
    text: str
    predicate: str | None = None
    status: str = "active"
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    memory_id: str | None = None

    def active_at(self, as_of: datetime | None) -> bool:
        if as_of is not None and (self.valid_from is not None or self.valid_to is not None):
            started = self.valid_from is None or self.valid_from <= as_of
            return started and (self.valid_to is None or self.valid_to > as_of)
        return self.status == "active"


def _value_pattern(value: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(_normalize_value(value)) + r"(?!\w)")


def _normalize_value(text: str) -> str:
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)
    return _fold(text.replace("$", " "))


def value_in_text(value: str, text: str) -> bool:
    return bool(_value_pattern(value).search(_normalize_value(text)))


class SupersessionOutcome(msgspec.Struct, frozen=True, kw_only=True):
    correct: bool
    stale_leak: bool
    stale_active: bool
    false_supersession: bool


def supersession_outcome(
    current: Sequence[str],
    stale: Sequence[str],
    facts: Sequence[ContextFact],
    as_of: datetime | None,
    predicate: str | None = None,
) -> SupersessionOutcome:
    relevant = [f for f in facts if predicate is None or f.predicate is None or f.predicate == predicate]
    active = [f for f in relevant if f.active_at(as_of)]
    inactive = [f for f in relevant if not f.active_at(as_of)]

    def anywhere(value: str, pool: Sequence[ContextFact]) -> bool:
        return any(value_in_text(value, f.text) for f in pool)

    return SupersessionOutcome(
        correct=bool(current) and all(anywhere(v, active) for v in current),
        stale_leak=any(anywhere(v, relevant) for v in stale),
        stale_active=any(anywhere(v, active) for v in stale),
        false_supersession=any(anywhere(v, inactive) and not anywhere(v, active) for v in current),
    )


# --- records ---------------------------------------------------------------------------------
class QuestionRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One question's outcome, with memory ids already mapped back to turn ids."""

    question_id: str
    conversation_id: str
    category: str
    answerable: bool = True
    evidence: tuple[str, ...] = ()
    ranked: tuple[str, ...] = ()  # turn ids in rank order (duplicates allowed; removed when scored)
    lines: tuple[ContextLine, ...] = ()
    context_tokens: int = 0  # the engine's count (token_counts.planned); 0 = sum of line tokens
    budget: int = 1200
    as_of: datetime | None = None
    predicate: str | None = None
    current_values: tuple[str, ...] = ()
    stale_values: tuple[str, ...] = ()
    facts: tuple[ContextFact, ...] = ()
    #: the store's facts of `predicate` (any status); None when the backend cannot list them
    stored_facts: tuple[ContextFact, ...] | None = None
    stage_ms: dict[str, float] = msgspec.field(default_factory=dict)


class QuestionMetrics(msgspec.Struct, frozen=True, kw_only=True):
    question_id: str
    conversation_id: str
    category: str
    recall_at_5: float | None = None
    recall_at_10: float | None = None
    recall_at_25: float | None = None
    recall_at_50: float | None = None
    mrr: float | None = None
    ndcg_at_10: float | None = None
    recall_in_context: float | None = None
    recall_in_context_whole: float | None = None
    supersession_correct: bool | None = None
    stale_leak: bool | None = None
    stale_active: bool | None = None
    false_supersession: bool | None = None
    store_correct: bool | None = None
    store_stale_active: bool | None = None
    context_tokens: int = 0
    evidence_tokens: int = 0
    budget: int = 0
    overflow: bool = False
    utilization: float = 0.0
    evidence_token_share: float | None = None  # evidence tokens / context tokens


def score(record: QuestionRecord) -> QuestionMetrics:
    tokens = record.context_tokens or sum(line.tokens for line in record.lines)
    evidence = set(record.evidence)
    evidence_lines = [line for line in record.lines if evidence & set(line.turn_ids)]
    evidence_tokens = sum(line.tokens for line in evidence_lines)
    values: dict[str, Any] = {}
    eligible = record.answerable and bool(evidence)
    if eligible:
        ranked = dedupe(record.ranked)
        for k in RECALL_KS:
            values[f"recall_at_{k}"] = recall_at_k(ranked, evidence, k)
        values["mrr"] = reciprocal_rank(ranked, evidence)
        values["ndcg_at_10"] = ndcg_at_k(ranked, evidence, 10)
        in_context = evidence & {t for line in record.lines for t in line.turn_ids}
        values["recall_in_context"] = len(in_context) / len(evidence)
        whole = evidence & {t for line in record.lines for t in line.whole_turn_ids}
        values["recall_in_context_whole"] = len(whole) / len(evidence)
    if record.current_values or record.stale_values:
        outcome = supersession_outcome(
            record.current_values, record.stale_values, record.facts, record.as_of, record.predicate
        )
        values["supersession_correct"] = outcome.correct if record.current_values else None
        values["stale_leak"] = outcome.stale_leak if record.stale_values else None
        values["stale_active"] = outcome.stale_active if record.stale_values else None
        values["false_supersession"] = outcome.false_supersession if record.current_values else None
        if record.stored_facts is not None:
            stored = supersession_outcome(
                record.current_values,
                record.stale_values,
                record.stored_facts,
                record.as_of,
                record.predicate,
            )
            values["store_correct"] = stored.correct if record.current_values else None
            values["store_stale_active"] = stored.stale_active if record.stale_values else None
            values["false_supersession"] = stored.false_supersession if record.current_values else None
    return QuestionMetrics(
        question_id=record.question_id,
        conversation_id=record.conversation_id,
        category=record.category,
        context_tokens=tokens,
        evidence_tokens=evidence_tokens,
        budget=record.budget,
        overflow=tokens > record.budget,
        utilization=tokens / record.budget if record.budget else 0.0,
        evidence_token_share=(evidence_tokens / tokens) if eligible and tokens else None,
        **values,
    )


# --- aggregation -----------------------------------------------------------------------------
RATE_COLUMNS: tuple[str, ...] = (
    *(f"recall_at_{k}" for k in RECALL_KS),
    "mrr",
    "ndcg_at_10",
    "recall_in_context",
    "recall_in_context_whole",
    "supersession_correct",
    "stale_leak",
    "stale_active",
    "false_supersession",
    "store_correct",
    "store_stale_active",
    "utilization",
    "evidence_token_share",
)
#: rate columns where a lower mean is the better result (a sweep ranks these ascending)
LOWER_IS_BETTER: tuple[str, ...] = ("stale_leak", "stale_active", "false_supersession", "store_stale_active")


def metrics_frame(metrics: Iterable[QuestionMetrics]) -> Any:
    """One row per question (a pandas DataFrame); None becomes NaN, booleans stay 0/1-able."""
    import pandas as pd

    rows = [msgspec.structs.asdict(m) for m in metrics]
    frame = pd.DataFrame(rows, columns=list(QuestionMetrics.__struct_fields__))
    for col in RATE_COLUMNS:
        frame[col] = pd.to_numeric(frame[col].astype("float64"), errors="coerce")
    return frame


def summarize(frame: Any, by: str | None = "category") -> Any:
    """Means of the rate columns (NaN left out), question count, overflow count, per group and
    an `all` row. Each mean's own denominator is the number of non-NaN rows of that column."""
    import pandas as pd

    def one(group: Any) -> dict[str, float]:
        row: dict[str, float] = {"n": float(len(group))}
        for col in RATE_COLUMNS:
            row[col] = float(group[col].mean()) if group[col].notna().any() else float("nan")
        row["overflow_count"] = float(group["overflow"].sum())
        row["n_recall"] = float(group["recall_at_10"].notna().sum())
        row["n_supersession"] = float(group["supersession_correct"].notna().sum())
        return row

    rows: dict[str, dict[str, float]] = {}
    if by is not None:
        for key, group in frame.groupby(by, sort=True):
            rows[str(key)] = one(group)
    rows["all"] = one(frame)
    out = pd.DataFrame.from_dict(rows, orient="index")
    for col in ("n", "overflow_count", "n_recall", "n_supersession"):
        out[col] = out[col].astype("int64")
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default), q in [0, 100]."""
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype="float64"), q)) if values else float("nan")


def latency_table(stage_ms: Iterable[Mapping[str, float]]) -> Any:
    """p50, p95, mean and count of each stage's milliseconds over the questions."""
    import pandas as pd

    samples: dict[str, list[float]] = {}
    for row in stage_ms:
        for stage, ms in row.items():
            samples.setdefault(stage, []).append(float(ms))
    data = {
        stage: {"p50": percentile(v, 50), "p95": percentile(v, 95), "mean": sum(v) / len(v), "n": len(v)}
        for stage, v in sorted(samples.items())
    }
    return pd.DataFrame.from_dict(data, orient="index", columns=["p50", "p95", "mean", "n"])


def ranx_means(
    ranked: Mapping[str, Sequence[str]],
    evidence: Mapping[str, Collection[str]],
    ks: Sequence[int] = RECALL_KS,
) -> dict[str, float]:
    """Mean recall@k, MRR and nDCG@10 computed by ranx over the questions that have evidence
    (slow: numba compiles on first use). Keys: `recall@5`, ..., `mrr`, `ndcg@10`."""
    from ranx import Qrels, Run, evaluate

    qids = [q for q in ranked if evidence.get(q)]
    qrels = Qrels({q: {t: 1 for t in evidence[q]} for q in qids})
    run_dict: dict[str, dict[str, float]] = {}
    for q in qids:
        items = dedupe(ranked[q])
        # ranx needs a non-empty run per query; an empty ranking scores 0 with an unknown id
        run_dict[q] = {t: float(len(items) - i) for i, t in enumerate(items)} or {"__none__": 0.0}
    names = [f"recall@{k}" for k in ks] + ["mrr", "ndcg@10"]
    result = evaluate(qrels, Run(run_dict), names, make_comparable=True)
    return {name: float(result[name]) for name in names}
