"""Goals, plans and quantities one states about oneself: budget ("my budget is now $800"), rent,
salary, weight, height."""

from __future__ import annotations

import re

from engine.extract.rules.clauses import LEAD, Clause, Collector
from engine.extract.rules.dates import find_relative
from engine.extract.rules.quantities import (
    Quantity,
    format_quantity,
    parse_measure,
    parse_money,
    parse_quantity,
)
from engine.extract.rules.text import DANGLING, SPACED_DASH, clean_object, trim_ends, without_dangling
from engine.letters import UPPER

_GOAL = re.compile(
    r"^(?P<v>want|wants|would like|would love|hope|hopes|am hoping|is hoping|aim|aims|am aiming|dream|"
    r"am trying|is trying|am determined|plan|plans|am planning|is planning|intend|intends|am going|is going|"
    r"have decided|decided) to (?P<o>.+)$",
    re.IGNORECASE,
)
_GOAL_ING = re.compile(
    r"^(?:am|is) (?P<v>saving(?: up)?|training|studying|preparing) for (?P<o>.+)$", re.IGNORECASE
)
_MY_GOAL = re.compile(
    r"\bmy (?:main |big |biggest |new |current )?(?P<k>goal|plan|dream|resolution|new year'?s resolution|ambition) (?:for \w+ )?is to (?P<o>.+)$",
    re.IGNORECASE,
)
_PLAN_VERBS = {"plan", "plans", "am planning", "is planning", "intend", "intends", "am going", "is going",
               "have decided", "decided"}  # fmt: skip
_BUDGET = re.compile(
    r"\bmy (?:monthly |weekly |annual |yearly |total |max(?:imum)? |new |overall )?budget(?: for [a-z ]+?)? is (?!not\b)(?P<q>.+)$",
    re.IGNORECASE,
)
_BUDGET_VP = re.compile(
    r"^(?:have|has) (?:a|an|got a) (?:\w+ )?budget of (?P<q>.+)$|^(?:can|could) (?:only )?(?:spend|afford) (?P<q2>.+)$"
    r"|^(?:am|is) willing to spend (?P<q3>.+)$|^(?:want|need) to (?:keep it|stay) under (?P<q4>.+)$",
    re.IGNORECASE,
)
_BUDGET_SENTENCE = re.compile(
    r"^(?:(?:please|so|ok|okay),? )?(?:keep it|keep things|stay) (?:under|below|within|at or under) (?P<q>.+)$"
    r"|^(?:my |the |our )?(?:new |updated |monthly |max(?:imum)? )?budget(?: update)?\s*(?::|-+|\u2014)\s*(?P<q2>.+)$"
    r"|\b(?:bump|bumping|bumped|raise|raising|raised|increase|increasing|increased|lower|lowering|lowered|"
    r"drop|dropping|dropped|cut|cutting|reduce|reducing|reduced|set|setting|change|changing|changed|up|upping|upped)"
    r" (?:up |down )?(?:the|my|our) budget (?:up |down )?to (?P<q3>.+)$"
    r"|\blet(?:'s| us) (?:cap|limit|keep) (?:it|things|spending|the budget|my budget|our budget) (?:at|to|under|below) (?P<q4>.+)$",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
_THAT_IS_BUDGET = re.compile(r"\b(?:that|this) is (?:my|our) (?:\w+ )?budget\b", re.IGNORECASE)
_MY_QTY = re.compile(
    r"\bmy (?:monthly |new |current |annual |yearly )?(?P<k>rent|salary|income|weight|height) is (?!not\b)(?P<q>.+)$",
    re.IGNORECASE,
)
_EARN = re.compile(
    r"^(?:earn|earns|make|makes) (?P<q>.+?)(?: a year| per year| annually| a month| per month)?$",
    re.IGNORECASE,
)
_PAY_RENT = re.compile(
    r"^(?:pay|pays) (?P<q>.+?) (?:in|for|a month in|per month in|monthly in|a month for) rent\b",
    re.IGNORECASE,
)
_WEIGH = re.compile(r"^(?:weigh|weighs) (?P<q>.+)$", re.IGNORECASE)
_TALL = re.compile(r"^(?:am|is) (?P<q>.+?) tall$", re.IGNORECASE)
_QTY_KIND = {"income": "salary"}


def _qty(out: Collector, clause: Clause, predicate: str, q: Quantity | None, confidence: float) -> None:
    if q is None:
        return
    shown = format_quantity(q.value, q.unit)
    out.fact(clause, predicate, q.value, object_type="number", object_name=shown, unit=q.unit,
             confidence=confidence, negated=False)  # fmt: skip


#: what a trimmed trailer leaves hanging, less the words a goal may end with ("get in", "a place to stay at")
_DANGLING_TRIMMED = DANGLING - {"from", "on", "in", "of", "over", "next", "last"}


#: where a goal's own clause ends: a reason, a concession, a remark after a dash, a second want or need
#: ("... and need help with data analysis"); a match starts only where a run of spaces does (linear)
_GOAL_END = re.compile(
    r"(?<!\s)\s++(?:because|since|so that|but)\s|,\s*+(?:even though|although|though)\b"
    rf"|(?<!\s){SPACED_DASH}|(?<!\s)\s++and\s++(?:want|need|would like)\s",
    re.IGNORECASE,
)


def _goal_text(raw: str, out: Collector) -> tuple[str, str | None]:
    """The goal's object, cut before the date it states, and that date. A possessive date ("the ticket
    stub from today's show") names a thing of the goal, not when it is: it stays in the object."""
    dm = find_relative(raw, out.reference)
    if dm and raw[dm.end : dm.end + 2] in ("'s", "\u2019s"):
        dm = None
    cut = dm is not None and dm.start > 0
    text = raw[: dm.start] if dm is not None and cut else raw
    end = _GOAL_END.search(text)
    clause = text if end is None else text[: end.start()]
    obj = clean_object(clause)
    if cut:
        obj = without_dangling(obj)
    elif obj != trim_ends(clause):
        obj = without_dangling(obj, _DANGLING_TRIMMED)
    return obj, (dm.iso if dm else None)


def _budget_sentence(out: Collector, clause: Clause, s: str) -> None:
    m = _BUDGET_SENTENCE.search(LEAD.sub("", s).strip())
    if m:
        raw = m.group("q") or m.group("q2") or m.group("q3") or m.group("q4")
        _qty(out, clause, "budget", parse_money(raw), 0.8)
        return
    cue = _THAT_IS_BUDGET.search(s)  # "$1,200 tops, that's my budget"
    if cue:
        _qty(out, clause, "budget", parse_money(s[: cue.start()]), 0.8)


def _self_statements(clause: Clause, out: Collector) -> None:
    """Sentence-level: "my goal/plan is ...", "my budget is ...", "my rent/salary/weight is ..."."""
    s = clause.sentence
    m = _MY_GOAL.search(s)
    if m:
        obj, when = _goal_text(m.group("o"), out)
        if obj:
            kind = "plans" if m.group("k").lower() == "plan" else "goal"
            out.fact(clause, kind, obj, confidence=0.85, event_date=when, negated=False)
    m = _BUDGET.search(s)
    if m:
        _qty(out, clause, "budget", parse_money(m.group("q")) or parse_quantity(m.group("q")), 0.9)
    if _DIGIT.search(s):  # every budget pattern below needs an amount
        _budget_sentence(out, clause, s)
    m = _MY_QTY.search(s)
    if m:
        kind = _QTY_KIND.get(m.group("k").lower(), m.group("k").lower())
        q = parse_money(m.group("q")) if kind in ("rent", "salary") else parse_measure(m.group("q"))
        _qty(out, clause, kind, q, 0.85)


#: "I'm going to a conference / to Lisbon": a place, so the plan is to go there
_PLACE_START = re.compile(rf"^(?:(?:a|an|the|my|our|his|her|their|some)\s|{UPPER})")


def _goals(clause: Clause, out: Collector, vp: str) -> None:
    """Goals and plans in the verb phrase: "I want to ...", "I plan to ...", "I'm saving for ..."."""
    m = _GOAL.match(vp)
    if m:
        obj, when = _goal_text(m.group("o"), out)
        verb = m.group("v").lower()
        place = verb in ("am going", "is going") and _PLACE_START.match(obj) is not None
        if obj and (place or obj[0].islower()) and len(obj.split()) <= 10:
            kind = "plans" if verb in _PLAN_VERBS else "goal"
            out.fact(clause, kind, f"go to {obj}" if place else obj, confidence=0.75, event_date=when)
    m = _GOAL_ING.match(vp)
    if m:
        verb = m.group("v").lower().split()[0]
        base = {"saving": "save", "training": "train", "studying": "study", "preparing": "prepare"}[verb]
        obj, when = _goal_text(m.group("o"), out)
        if obj:
            out.fact(clause, "goal", f"{base} for {obj}", confidence=0.7, event_date=when)


def _quantities(clause: Clause, out: Collector, vp: str) -> None:
    """Budget, salary, rent, weight and height stated in the verb phrase."""
    m = _BUDGET_VP.match(vp)
    if m:
        raw = m.group("q") or m.group("q2") or m.group("q3") or m.group("q4")
        _qty(out, clause, "budget", parse_money(raw), 0.85)
    m = _EARN.match(vp)
    if m:
        _qty(out, clause, "salary", parse_money(m.group("q")), 0.8)
    m = _PAY_RENT.match(vp)
    if m:
        _qty(out, clause, "rent", parse_money(m.group("q")), 0.85)
    m = _WEIGH.match(vp)
    if m:
        _qty(out, clause, "weight", parse_measure(m.group("q")), 0.85)
    m = _TALL.match(vp)
    if m:
        _qty(out, clause, "height", parse_measure(m.group("q")), 0.85)


def extract(clause: Clause, out: Collector) -> None:
    if clause.is_self:
        _self_statements(clause, out)
    vp = clause.vp
    if not vp or clause.plain_negation or clause.negated:
        return
    _goals(clause, out, vp)
    _quantities(clause, out, vp)
