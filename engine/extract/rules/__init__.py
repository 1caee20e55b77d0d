"""The rule extractor: deterministic, no network, a few hundred microseconds per sentence.

Pipeline per sentence: normalize (contractions, quotes) -> entity scan (gazetteers, dates,
quantities) -> presupposed facts ("my sister Anna", in any sentence) -> rewrites (dropped subjects,
reported diagnoses, see `rewrite`) -> statement filter (questions, hypotheticals, reported speech,
small talk yield no facts) -> independent clauses ("..., I ...") -> clauses (subject + verb phrase
+ negation) -> every pattern family in `FAMILIES`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from engine.extract.base import ExtractResult
from engine.extract.rules import contact, family, personal, plans, preferences, presupposed, work
from engine.extract.rules.clauses import Clause, Collector, make_clauses
from engine.extract.rules.dates import find_date
from engine.extract.rules.entities import scan_named
from engine.extract.rules.quantities import format_quantity, parse_measure, parse_money
from engine.extract.rules.rewrite import rewrite, split_statement
from engine.extract.rules.text import is_statement, normalize_text, slug, split_sentences
from engine.models import Entity
from engine.timeutil import to_utc, utcnow

Family = Callable[[Clause, Collector], None]

#: the pattern families, applied in this order to every clause
FAMILIES: tuple[Family, ...] = (
    personal.extract,
    work.extract,
    family.extract,
    preferences.extract,
    plans.extract,
    contact.extract,
)


def _scan_entities(sentence: str, out: Collector) -> None:
    for ent in scan_named(sentence):
        out.entities.setdefault(ent.entity_id, ent)
    dm = find_date(sentence, out.reference)
    if dm:
        eid = f"ent:{slug(dm.iso)}"
        out.entities.setdefault(
            eid,
            Entity(entity_id=eid, type="date", name=sentence[dm.start : dm.end], confidence=0.9,
                   attributes={"iso": dm.iso, "relative": dm.relative}),  # fmt: skip
        )
    q = parse_money(sentence) or parse_measure(sentence)
    if q:
        eid = "ent:" + slug(f"{q.value} {q.unit or ''}")
        out.entities.setdefault(
            eid,
            Entity(entity_id=eid, type="quantity", name=format_quantity(q.value, q.unit), confidence=0.9,
                   attributes={"value": q.value, "unit": q.unit}),  # fmt: skip
        )


def _drop_unused_people(out: Collector, known: set[str], n_facts: int) -> None:
    """A capitalized word taken as a person subject ("Pizza is great") stays only if a fact used it."""
    used = {f.subject for f in out.facts[n_facts:]} | {str(f.object) for f in out.facts[n_facts:]}
    for eid in [e for e in out.entities if e not in known]:
        if out.entities[eid].type == "person" and eid not in used:
            del out.entities[eid]


class RuleExtractor:
    name = "rules"

    def extract(
        self, text: str, *, subject: str = "ent:user", reference_time: datetime | None = None
    ) -> ExtractResult:
        reference = to_utc(reference_time) if reference_time is not None else utcnow()
        out = Collector(reference=reference)
        for raw in split_sentences(text):
            sentence = normalize_text(raw)
            _scan_entities(sentence, out)
            out.source_text = raw
            known, n_facts = set(out.entities), len(out.facts)
            presupposed.extract(sentence, subject, out)
            sentence = rewrite(sentence)
            if is_statement(sentence):
                for part in split_statement(sentence):
                    for clause in make_clauses(part, subject, out):
                        for extract_family in FAMILIES:
                            extract_family(clause, out)
            _drop_unused_people(out, known, n_facts)
        return ExtractResult(entities=list(out.entities.values()), facts=list(out.facts), extractor=self.name)


def extract(text: str, *, subject: str = "ent:user", reference_time: datetime | None = None) -> ExtractResult:
    return RuleExtractor().extract(text, subject=subject, reference_time=reference_time)


__all__ = ["FAMILIES", "RuleExtractor", "extract"]
