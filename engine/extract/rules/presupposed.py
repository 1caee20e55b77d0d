"""Facts a sentence takes for granted, whatever it goes on to say: they hold in questions, wishes
and reported speech too.

- "my <relation> <Name>" anywhere, and "<Name>, my <relation>, ...": "Priya, my boyfriend, thinks
  I work too much" -> partner Priya; "Should I tell my sister Anna?" -> has_sibling Anna.
- "As a 34-year-old I should ..." -> age 34 (present tense only: "As a 10-year-old I broke my arm"
  is a memory, not an age).
"""

from __future__ import annotations

import re

from engine.extract.rules.clauses import RELATIONS, Clause, Collector
from engine.letters import LETTER, UPPER

_REL = "|".join(sorted(RELATIONS, key=len, reverse=True))
_NAME = rf"(?P<name>(?-i:{UPPER}(?:{LETTER}|-){{1,40}}(?:\s+{UPPER}(?:{LETTER}|-){{1,40}})?))"
_MODS = r"(?:(?:older|younger|little|big|baby|eldest|youngest|new|current|lovely|amazing)\s+)?"
_MY_REL_NAME = re.compile(rf"\bmy\s+{_MODS}(?P<rel>{_REL})\s+{_NAME}\b", re.IGNORECASE)
_APPOSITIVE = re.compile(rf"^{_NAME},\s+my\s+{_MODS}(?P<rel>{_REL}),", re.IGNORECASE)
_AS_AGE = re.compile(
    r"^as an? (?P<n>\d{1,3})[- ]years?[- ]old,?\s+I\s+(?:should|am|need|want|can|have|do|feel|think|know|"
    r"would|must|worry|wonder|get)\b",
    re.IGNORECASE,
)


def extract(sentence: str, user: str, out: Collector) -> None:
    """Presupposed facts of one normalized sentence (statement or not)."""
    base = Clause(user, out.speaker, True, "", sentence, user=user)
    a = _AS_AGE.match(sentence)
    if a and 0 < int(a.group("n")) < 120:
        n = int(a.group("n"))
        out.fact(base, "age", n, unit="years", object_name=str(n), confidence=0.8)
    if "my " not in sentence.lower():
        return
    pairs = [(x.group("rel"), x.group("name")) for x in _MY_REL_NAME.finditer(sentence)]
    m = _APPOSITIVE.match(sentence)
    if m:
        pairs.append((m.group("rel"), m.group("name")))
    for rel, name in pairs:
        out.relative(base, rel, name)
