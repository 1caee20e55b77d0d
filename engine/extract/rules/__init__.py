"""The rule extractor: deterministic, no network, cheap per sentence.

Every pattern runs in time linear in its input (tests/engine/extract/test_linear_time.py), and one text
gets a time budget (`LOCI_EXTRACT_BUDGET_MS`, default 500; 0 turns it off; the speakers' parts of one
turn share it): past it, extraction stops between sentences and the result says `truncated`.

The text is read plain (`text.plain_text`: composed, without markup) and split into sentences.
Pipeline per sentence: normalize (whitespace, contractions, quotes) -> entity scan (gazetteers, dates,
quantities) -> presupposed facts ("my sister Anna", in any sentence) -> rewrites (dropped subjects,
reported diagnoses, see `rewrite`) -> statement filter (questions, hypotheticals, reported speech,
small talk yield no facts) -> independent clauses ("..., I ...", "... and my dog is ...") -> clauses
(subject + verb phrase + negation) -> every pattern family in `FAMILIES`.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Mapping
from datetime import datetime

from engine.envnum import env_number
from engine.extract.base import ExtractResult
from engine.extract.rules import contact, family, personal, plans, preferences, presupposed, work
from engine.extract.rules.case import restore_names, writes_names_in_lower_case
from engine.extract.rules.clauses import Clause, Collector, make_clauses
from engine.extract.rules.dates import find_date
from engine.extract.rules.entities import scan_named
from engine.extract.rules.quantities import format_quantity, parse_measure, parse_money
from engine.extract.rules.rewrite import about_someone_else, rewrite, split_statement
from engine.extract.rules.text import hedged, is_statement, normalize_text, plain_text, slug, split_sentences
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
            Entity(
                entity_id=eid,
                type="date",
                name=sentence[dm.start : dm.end],
                confidence=0.9,
                attributes={"iso": dm.iso, "relative": dm.relative},
            ),  # fmt: skip
        )
    q = parse_money(sentence) or parse_measure(sentence)
    if q:
        eid = "ent:" + slug(f"{q.value} {q.unit or ''}")
        out.entities.setdefault(
            eid,
            Entity(
                entity_id=eid,
                type="quantity",
                name=format_quantity(q.value, q.unit),
                confidence=0.9,
                attributes={"value": q.value, "unit": q.unit},
            ),  # fmt: skip
        )


def _drop_unused_people(out: Collector, known: set[str], n_facts: int) -> None:
    """A capitalized word taken as a person subject ("Pizza is great") stays only if a fact used it."""
    used = {f.subject for f in out.said[n_facts:]} | {str(f.object) for f in out.said[n_facts:]}
    for eid in [e for e in out.entities if e not in known]:
        if out.entities[eid].type == "person" and eid not in used:
            del out.entities[eid]


BUDGET_ENV = "LOCI_EXTRACT_BUDGET_MS"
DEFAULT_BUDGET_MS = 500.0


def budget_from_env(env: Mapping[str, str] | None = None) -> float:
    """The per-text budget in milliseconds (`LOCI_EXTRACT_BUDGET_MS`, a number >= 0; 0: no budget)."""
    return env_number(os.environ if env is None else env, BUDGET_ENV, DEFAULT_BUDGET_MS)


def _extract_sentence(raw: str, subject: str, out: Collector, about_other: bool = False) -> bool:
    """Reads one sentence into `out`; `about_other`: the sentences before left someone else the one a
    sentence without its subject is about (`rewrite.about_someone_else`), which this returns for the next."""
    sentence = normalize_text(raw)
    _scan_entities(sentence, out)
    out.source_text = raw
    known, n_facts = set(out.entities), len(out.said)
    presupposed.extract(sentence, subject, out)
    next_about_other = about_someone_else(sentence, about_other)
    sentence = rewrite(sentence, about_other)
    if is_statement(sentence):
        for part in split_statement(sentence):
            if hedged(part):
                break  # a hedge governs its clause and those after it ("If I move, I will ...")
            for clause in make_clauses(part, subject, out):
                for extract_family in FAMILIES:
                    extract_family(clause, out)
    _drop_unused_people(out, known, n_facts)
    return next_about_other


class RuleExtractor:
    """`budget_ms`: time one `extract` call may take (default `budget_from_env()`; 0 or less: none),
    checked between sentences on `clock` (seconds)."""

    name = "rules"
    #: a time on `clock` every call also stops at (`for_one_turn`)
    shared_deadline: float | None = None

    def __init__(
        self, budget_ms: float | None = None, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.budget_ms = budget_from_env() if budget_ms is None else budget_ms
        self.clock = clock

    def for_one_turn(self) -> RuleExtractor:
        """This extractor with one deadline, a budget from now, for every call: the speakers' parts of
        one turn share the budget. A copy, so concurrent turns keep their own."""
        if self.budget_ms <= 0:
            return self
        turn = copy.copy(self)
        turn.shared_deadline = self.clock() + self.budget_ms / 1000
        return turn

    def extract(
        self,
        text: str,
        *,
        subject: str = "ent:user",
        reference_time: datetime | None = None,
        subject_name: str = "User",
    ) -> ExtractResult:
        if reference_time is None:
            reference = utcnow()
        else:  # relative dates resolve in the reference's own calendar day; a naive time is UTC
            reference = reference_time if reference_time.tzinfo is not None else to_utc(reference_time)
        out = Collector(reference=reference, speaker=subject_name)
        own = self.clock() + self.budget_ms / 1000 if self.budget_ms > 0 else None
        shared = self.shared_deadline
        deadline = own if shared is None else shared if own is None else min(own, shared)
        truncated = about_other = False
        plain = plain_text(text)
        if writes_names_in_lower_case(plain):
            plain = restore_names(plain)
        for raw in split_sentences(plain):
            if deadline is not None and self.clock() > deadline:
                truncated = True
                break
            about_other = _extract_sentence(raw, subject, out, about_other)
        return ExtractResult(
            entities=list(out.entities.values()),
            facts=out.facts,
            extractor=self.name,
            truncated=truncated,
        )


def extract(
    text: str,
    *,
    subject: str = "ent:user",
    reference_time: datetime | None = None,
    subject_name: str = "User",
) -> ExtractResult:
    return RuleExtractor().extract(
        text, subject=subject, reference_time=reference_time, subject_name=subject_name
    )


__all__ = ["FAMILIES", "RuleExtractor", "extract"]
