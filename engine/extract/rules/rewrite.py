"""Sentence rewrites that let the clause patterns see what a chat turn says in a looser form.

- a diagnosis reported about the speaker is the speaker's fact: "The doctor says I have an allergy
  to X" -> "I have an allergy to X" (only doctors and test results, only about "I": other reported
  speech stays unstated, see `text.is_statement`);
- "I can't be around X, I'm allergic" -> "I am allergic to X";
- a diary-style sentence without its subject gets one: "Got a dog from the shelter" -> "I got a
  dog from the shelter" (only after a short list of past-tense verbs; "Officially 34 as of today"
  -> "I am officially 34 as of today");
- a statement splits into independent clauses at ", I ..." and ";" (`split_statement`), so "Our dog
  passed away, I don't have a dog anymore" reaches the first-person patterns. A hedged clause
  (`text.hedged`) states nothing, nor do the clauses after it: "If I move, I ..." gives nothing,
  "I started at Stripe and I think I love it" gives the first clause.
- it also splits where "and"/"but"/"so" (after an optional comma) starts a clause with its own subject:
  "I", "we", "my <noun> <verb>" or "<Name> <verb>", once the clause before has a verb. "My name is
  Sam and I'm 29" -> ["My name is Sam", "I am 29"]; "My wife Sarah and I live in Denver" (no verb
  before "and") and "I love hiking and swimming" (no subject after it) stay whole.
"""

from __future__ import annotations

import re

from engine.extract.rules.clauses import LEAD, RELATIONS
from engine.extract.rules.entities import is_person_name
from engine.extract.rules.text import word_set
from engine.letters import LOWER, NAME_CHAR, UPPER

_DIAGNOSIS = re.compile(
    r"^(?:the |my |our )?(?:new |latest |recent )?(?:doctors?|allergist|dermatologist|gp|physician|"
    r"tests?|test results|results|blood tests?|blood work|lab results|labs)\s+"
    r"(?:says?|said|confirmed|confirms?|show|showed|shows|found)(?: that)?\s+(?=I\s)",
    re.IGNORECASE,
)
_AROUND_ALLERGIC = re.compile(
    r"^I can not (?:be around|be near|go near|eat|have|touch|take|drink) (?P<o>[^,;]*?[^,;\s])\s*+[,;]?+\s*+"
    r"(?:because |since |as |(?<!-)-++ )?I am (?:very |severely |super |so |really )?allergic(?: to (?:it|them))?[.!]*$",
    re.IGNORECASE,
)
_DROPPED_SUBJECT = re.compile(
    r"^(?P<adv>(?:(?:just|finally|recently|also|officially|so|and)\s+)*)"
    r"(?P<verb>got|started|moved|relocated|settled|joined|left|adopted|rescued|celebrated|switched|quit|"
    r"turned|bought|signed)\s",
    re.IGNORECASE,
)
_DROPPED_COPULA = re.compile(r"^(?P<adv>officially|finally|now|just)\s+(?=\d{1,3}\b)", re.IGNORECASE)
_CLAUSE_SPLIT = re.compile(
    r"(?<!\s)(?:\s*+[,\u2014]\s++(?:and |but |so )?(?:now |then |these days )?(?=I\s)|\s*+;\s+)",
    re.IGNORECASE,
)
#: verbs that follow a third-person subject ("my dog is", "Anna lives")
_THIRD = (
    r"is|are|was|were|has|have|had|lives|works|loves|likes|enjoys|hates|studies|speaks|plays|owns|drives|"
    r"moved|joined|started|got|turned|just|recently|now|no longer|does not|did not|passed away|died"
)
#: "and"/"but"/"so"/"while" (after an optional comma, before an optional "now") before a new subject
#: ("so I could be near my mom", "but now I live in Lyon", "while I work at Stripe"); a match starts
#: only where a run of spaces starts, and the words between "my" and its verb are bounded: linear
_COORDINATION = re.compile(
    rf"(?<!\s)\s*+(?:,\s*+)?\b(?:and|but|so|while|whereas)\s++(?:(?:now|then|these days)\s++)?+"
    rf"(?=(?:I|we)\s|my\s++(?:[\w'\-]++\s++){{0,3}}?(?:{_THIRD})\b"
    rf"|(?-i:{UPPER}{NAME_CHAR}{{1,40}})\s++(?:{_THIRD})\b)",
    re.IGNORECASE,
)
#: a clause that has its verb: a first-person subject with words after it, or a common finite verb
_HAS_VERB = re.compile(
    rf"(?:^|\s)(?:I|we)\s++\S|\b(?:am|do|does|did|will|can|live|work|love|like|enjoy|hate|own|play|speak|"
    rf"study|{_THIRD})\b",
    re.IGNORECASE,
)


_PEOPLE = "|".join(
    sorted(
        set(RELATIONS)
        | word_set(
            "aunt uncle cousin grandma grandpa grandmother grandfather granddaughter grandson niece nephew "
            "boss neighbor neighbour bf gf hubby stepson stepdaughter stepmom stepdad parents kids sons "
            "daughters sisters brothers friends cousins"
        ),
        key=len,
        reverse=True,
    )
)
#: "my sister", "our little brother": a relative of the speaker's (two words at most before the noun)
_RELATIVE = rf"(?:my|our)\s++(?:\w+\s++){{0,2}}?(?:{_PEOPLE})"
_SELF_SUBJECT = re.compile(
    rf"^(?:I|we|me and|{_RELATIVE}(?:\s++\w+)?\s++and (?:I|me)"
    rf"|(?-i:{UPPER}{LOWER}+)\s++and (?:I|me))\b",
    re.IGNORECASE,
)
_OTHER_SUBJECT = re.compile(
    rf"^(?:he|she|they|{_RELATIVE})\b"
    rf"|^(?P<name>(?-i:{UPPER}(?:{LOWER}|['\-])+))\s++(?:{_THIRD})\b",
    re.IGNORECASE,
)
#: a sentence that starts with its verb: its subject is left out ("Talked to my mom today.")
_VERB_FIRST = re.compile(
    r"^(?:(?:just|finally|also|so|then)\s++)*(?:\w+ed|had|went|saw|met|took|made|spent|came|found|told|gave|"
    r"bought|ran|heard|sent|caught|brought|felt|thought|spoke|called|visited)\b",
    re.IGNORECASE,
)
_OTHER_PERSON = re.compile(rf"\b(?:he|she|him|her|they|them|{_RELATIVE})\b", re.IGNORECASE)


def about_someone_else(sentence: str, before: bool) -> bool:
    """Whether a sentence (normalized) leaves someone else the one a next sentence without its subject
    is about: it has a third person for subject ("My sister got engaged!", "Tom just turned 40!"), or no
    subject of its own and a third person in it ("Talked to my mom today."); a first-person subject
    makes it the speaker; other sentences leave it as `before` was."""
    body = LEAD.sub("", sentence).strip()
    if _SELF_SUBJECT.match(body):
        return False
    if _DROPPED_SUBJECT.match(body) or _DROPPED_COPULA.match(body) or _VERB_FIRST.match(body):
        return before or (_OTHER_PERSON.search(body) is not None and re.search(r"\bI\b", body) is None)
    other = _OTHER_SUBJECT.match(body)
    if other:
        return other.group("name") is None or is_person_name(other.group("name"))
    return before


def rewrite(sentence: str, about_other: bool = False) -> str:
    """`sentence` (normalized) in a form the clause patterns read; unchanged when no rule fires. After a
    sentence about someone else (`about_someone_else`), a sentence without its subject is left without
    one: whose it is is not told."""
    body = LEAD.sub("", sentence).strip()
    m = _DIAGNOSIS.match(body)
    if m:
        body = body[m.end() :]
    m2 = _AROUND_ALLERGIC.match(body)
    if m2:
        return f"I am allergic to {m2.group('o')}."
    if m:
        return body
    if about_other:
        return sentence
    m3 = _DROPPED_SUBJECT.match(body)
    if m3:
        return f"I {m3.group('adv')}{m3.group('verb').lower()} {body[m3.end() :]}"
    m4 = _DROPPED_COPULA.match(body)
    if m4:
        return f"I am {body}"
    return sentence


#: a place or employer one had, told before the one one has now
_HAD = re.compile(
    r"^I (?:used to|no longer|(?:do|did) not) (?P<verb>live|work|stay|study) (?P<prep>in|at|for)\s",
    re.IGNORECASE,
)
#: "..., now Lyon": the new value without its verb, which is the one of the clause before
_NOW_ONLY = re.compile(
    rf"(?<!\s)(?:\s*+,|\s++but|\s++[-\u2013\u2014]++)\s++(?:but\s++)?now\s++(?:(?:in|at|for)\s++)?(?=(?-i:{UPPER}))(?!I\s)",
    re.IGNORECASE,
)
#: "I'm at Stripe" after "I used to work at Google": "am" stands for the verb of the clause before
_AM_NOW = re.compile(r"^I am (?:now |currently )?(?P<prep>in|at|for)\s++(?P<rest>.+)$", re.IGNORECASE)


def split_statement(sentence: str) -> list[str]:
    """Independent clauses of a statement: "A, I B", "A; B" and "A and my X is B" -> ["A", "I B"],
    ["A", "B"], ["A", "my X is B"]. A clause that contrasts what one has now with what one had takes
    the verb it leaves out from the clause before: "I used to live in Paris, now Lyon" and "I used to
    work at Google but now I'm at Stripe" -> [..., "I live in Lyon"], [..., "I work at Stripe"]."""
    had = _HAD.match(sentence)
    if had:
        now = _NOW_ONLY.search(sentence)
        if now:
            verb = f"I {had.group('verb')} {had.group('prep')} "
            sentence = f"{sentence[: now.start()]}, {verb}{sentence[now.end() :]}"
    parts = [c.strip() for p in _CLAUSE_SPLIT.split(sentence) for c in _coordinated(p)]
    parts = [p for p in parts if p]
    for i in range(1, len(parts)):
        before, am = _HAD.match(parts[i - 1]), _AM_NOW.match(parts[i])
        if before and am and am.group("prep").lower() == before.group("prep").lower():
            parts[i] = f"I {before.group('verb')} {before.group('prep')} {am.group('rest')}"
    return parts


def _coordinated(text: str) -> list[str]:
    """`text` cut before each "and"/"but" that starts a clause with its own subject, where the clause
    before it has a verb ("My wife Sarah and I ..." is one clause). Each character is read once."""
    parts: list[str] = []
    start = seen = 0
    has_verb = False
    for m in _COORDINATION.finditer(text):
        has_verb = has_verb or _HAS_VERB.search(text[seen : m.start()]) is not None
        seen = m.end()
        if has_verb:
            parts.append(text[start : m.start()])
            start, has_verb = m.end(), False
    parts.append(text[start:])
    return parts
