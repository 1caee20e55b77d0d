"""How much of what users say in a synthetic dataset the fact extractor catches.

The synthetic generator (`evals/synthetic.py`) records on every fact-stating turn the facts it
states (`Turn.facts`: predicate, value, action set|add|remove). This module runs an extractor over
each user turn, the way the replay does (`extract(turn.text, subject=ent:<speaker>,
reference_time=turn.timestamp)`), and compares:

- a gold `set`/`add` fact is *caught* when a non-negated draft about the speaker has the same
  predicate and its `object_name` contains the value (`evals.metrics.value_in_text`, the test the
  supersession metric applies to stored facts);
- a gold `remove` fact is caught by a negated draft with the same predicate and value;
- an *extra* is a draft of one of the generator's predicates that matches no gold fact of its turn, split into extras on fact turns and
  extras on chatter turns (turns stating nothing). A negated draft whose value the speaker stated
  earlier for that predicate ("I left Atlassian and joined Siemens" also ends Atlassian) is true
  and not counted.

A dataset without gold facts (LoCoMo, LongMemEval) has nothing to catch: there the report counts the
drafts per predicate (`Coverage.drafts`, a negation as `!<predicate>`) and the turns that yield any.

    coverage(SyntheticConfig(seed=2, entities=30)) -> Coverage
    print(format_table(coverage(dataset)))
    python -m evals.extraction_coverage --seeds 11 12 13 --entities 30
    python -m evals.extraction_coverage --dataset locomo
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Iterable, Sequence

import msgspec

from engine.extract import Extractor, FactDraft, create_extractor
from engine.extract.rules.text import slug
from evals.loaders import load_dataset
from evals.metrics import value_in_text
from evals.model import Dataset, GoldFact, Turn
from evals.synthetic import ASSISTANT, MULTI_VALUED, SINGLE_VALUED, SyntheticConfig, generate

#: the predicates the generator states; drafts of other predicates (a job title from "as a PM")
#: cannot be judged against its gold and are not counted as extras
JUDGED: frozenset[str] = frozenset(SINGLE_VALUED + MULTI_VALUED)


class CoverageRow(msgspec.Struct, frozen=True, kw_only=True):
    predicate: str
    action: str  # set | add | remove
    caught: int
    total: int

    @property
    def rate(self) -> float:
        return self.caught / self.total if self.total else 0.0


class Miss(msgspec.Struct, frozen=True, kw_only=True):
    turn_id: str
    text: str
    predicate: str
    action: str
    value: str


class Extra(msgspec.Struct, frozen=True, kw_only=True):
    turn_id: str
    text: str
    predicate: str
    object_name: str
    negated: bool
    on_chatter: bool


class DraftCount(msgspec.Struct, frozen=True, kw_only=True):
    predicate: str  # "!<predicate>" for a negation
    drafts: int


class Coverage(msgspec.Struct, frozen=True, kw_only=True):
    rows: tuple[CoverageRow, ...]
    misses: tuple[Miss, ...]
    extras: tuple[Extra, ...]
    user_turns: int
    seconds: float  # time spent inside the extractor
    #: every draft about any subject, per predicate, most frequent first
    drafts: tuple[DraftCount, ...] = ()
    #: user turns that yielded at least one draft
    fact_turns: int = 0

    @property
    def caught(self) -> int:
        return sum(r.caught for r in self.rows)

    @property
    def total(self) -> int:
        return sum(r.total for r in self.rows)

    @property
    def turns_per_second(self) -> float:
        return self.user_turns / self.seconds if self.seconds > 0 else 0.0


def _matches(draft: FactDraft, gold: GoldFact, subject: str) -> bool:
    if draft.subject != subject or draft.predicate != gold.predicate:
        return False
    if draft.negated != (gold.action == "remove"):
        return False
    return value_in_text(gold.value, draft.object_name)


def _datasets(source: Dataset | SyntheticConfig | Iterable[Dataset | SyntheticConfig]) -> list[Dataset]:
    if isinstance(source, Dataset):
        return [source]
    if isinstance(source, SyntheticConfig):
        return [generate(source)]
    return [d for s in source for d in _datasets(s)]


def coverage(
    source: Dataset | SyntheticConfig | Iterable[Dataset | SyntheticConfig],
    extractor: Extractor | None = None,
) -> Coverage:
    """Per (predicate, action): gold facts caught / stated, over every user turn of the dataset(s)."""
    extractor = extractor or create_extractor("rules")
    counts: dict[tuple[str, str], list[int]] = {}
    misses: list[Miss] = []
    extras: list[Extra] = []
    drafted: Counter[str] = Counter()
    n_turns = fact_turns = 0
    spent = 0.0
    for dataset in _datasets(source):
        for conv in dataset.conversations:
            said: dict[str, set[str]] = {}  # predicate -> values the speaker stated so far
            for turn in conv.turns:
                if turn.speaker.casefold() == ASSISTANT:
                    continue
                n_turns += 1
                subject = f"ent:{slug(turn.speaker)}"
                started = time.perf_counter()
                drafts = extractor.extract(turn.text, subject=subject, reference_time=turn.timestamp).facts
                spent += time.perf_counter() - started
                drafted.update(("!" if d.negated else "") + d.predicate for d in drafts)
                fact_turns += bool(drafts)
                _score_turn(turn, drafts, subject, said, counts, misses, extras)
    rows = tuple(
        CoverageRow(predicate=p, action=a, caught=c[0], total=c[1]) for (p, a), c in sorted(counts.items())
    )
    per_predicate = tuple(
        DraftCount(predicate=p, drafts=n) for p, n in sorted(drafted.items(), key=lambda x: (-x[1], x[0]))
    )
    return Coverage(rows=rows, misses=tuple(misses), extras=tuple(extras), user_turns=n_turns, seconds=spent,
                    drafts=per_predicate, fact_turns=fact_turns)  # fmt: skip


def _score_turn(
    turn: Turn,
    drafts: Sequence[FactDraft],
    subject: str,
    said: dict[str, set[str]],
    counts: dict[tuple[str, str], list[int]],
    misses: list[Miss],
    extras: list[Extra],
) -> None:
    used: set[int] = set()
    for gold in turn.facts:
        cell = counts.setdefault((gold.predicate, gold.action), [0, 0])
        cell[1] += 1
        hit = [i for i, d in enumerate(drafts) if _matches(d, gold, subject)]
        if hit:
            cell[0] += 1
            used.update(hit)
        else:
            misses.append(Miss(turn_id=turn.turn_id, text=turn.text, predicate=gold.predicate,
                               action=gold.action, value=gold.value))  # fmt: skip
    for i, d in enumerate(drafts):
        if i in used or d.predicate not in JUDGED:
            continue
        earlier = said.get(d.predicate, set())
        if d.negated and d.subject == subject and any(value_in_text(v, d.object_name) for v in earlier):
            continue  # "I left Atlassian": true, the speaker said so before
        extras.append(Extra(turn_id=turn.turn_id, text=turn.text, predicate=d.predicate,
                            object_name=d.object_name, negated=d.negated, on_chatter=not turn.facts))  # fmt: skip
    for gold in turn.facts:
        said.setdefault(gold.predicate, set()).add(gold.value)


def format_table(report: Coverage, *, show_misses: int = 0, show_extras: int = 0) -> str:
    """A plain-text table: predicate, action, caught/total, rate; then extras per predicate."""
    lines = [f"{'predicate':<14}{'action':<8}{'caught':>8}{'total':>7}{'rate':>7}"]
    for r in report.rows:
        lines.append(f"{r.predicate:<14}{r.action:<8}{r.caught:>8}{r.total:>7}{r.rate:>7.2f}")
    rate = report.caught / report.total if report.total else 0.0
    lines.append(f"{'all':<22}{report.caught:>8}{report.total:>7}{rate:>7.2f}")
    on_facts = sum(1 for e in report.extras if not e.on_chatter)
    on_chatter = len(report.extras) - on_facts
    lines.append(f"extras: {on_facts} on fact turns, {on_chatter} on chatter turns; "
                 f"{report.user_turns} user turns, {report.turns_per_second:,.0f} turns/s")  # fmt: skip
    drafts = sum(c.drafts for c in report.drafts)
    lines.append(f"drafts: {drafts} from {report.fact_turns} of {report.user_turns} user turns: "
                 + ", ".join(f"{c.predicate} {c.drafts}" for c in report.drafts))  # fmt: skip
    for m in report.misses[:show_misses]:
        lines.append(f"  miss {m.predicate}/{m.action} {m.value!r}: {m.text}")
    for e in report.extras[:show_extras]:
        neg = "!" if e.negated else ""
        lines.append(f"  extra {neg}{e.predicate}={e.object_name!r}: {e.text}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--entities", type=int, default=30)
    parser.add_argument("--dataset", help="a dataset name or path (evals.loaders) instead of synthetic seeds")
    parser.add_argument("--misses", type=int, default=0, help="print this many misses")
    parser.add_argument("--extras", type=int, default=0, help="print this many extras")
    args = parser.parse_args(argv)
    source: Dataset | list[SyntheticConfig] = (
        load_dataset(args.dataset)
        if args.dataset
        else [SyntheticConfig(seed=s, entities=args.entities) for s in args.seeds]
    )
    print(format_table(coverage(source), show_misses=args.misses, show_extras=args.extras))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
