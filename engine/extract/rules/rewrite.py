"""Sentence rewrites that let the clause patterns see what a chat turn says in a looser form.

- a diagnosis reported about the speaker is the speaker's fact: "The doctor says I have an allergy
  to X" -> "I have an allergy to X" (only doctors and test results, only about "I": other reported
  speech stays unstated, see `text.is_statement`);
- "I can't be around X, I'm allergic" -> "I am allergic to X";
- a diary-style sentence without its subject gets one: "Got a dog from the shelter" -> "I got a
  dog from the shelter" (only after a short list of past-tense verbs; "Officially 34 as of today"
  -> "I am officially 34 as of today");
- a statement splits into independent clauses at ", I ..." and ";" (`split_statement`), so "Our dog
  passed away, I don't have a dog anymore" reaches the first-person patterns. Only statements are
  split: "If I move, I ..." is dropped whole by the hypothetical filter before any split.
"""

from __future__ import annotations

import re

from engine.extract.rules.clauses import LEAD

_DIAGNOSIS = re.compile(
    r"^(?:the |my |our )?(?:new |latest |recent )?(?:doctors?|allergist|dermatologist|gp|physician|"
    r"tests?|test results|results|blood tests?|blood work|lab results|labs)\s+"
    r"(?:says?|said|confirmed|confirms?|show|showed|shows|found)(?: that)?\s+(?=I\s)",
    re.IGNORECASE,
)
_AROUND_ALLERGIC = re.compile(
    r"^I can not (?:be around|be near|go near|eat|have|touch|take|drink) (?P<o>[^,;]*?[^,;\s])\s*+[,;]?+\s*+"
    r"(?:because |since |as |-+ )?I am (?:very |severely |super |so |really )?allergic(?: to (?:it|them))?[.!]*$",
    re.IGNORECASE,
)
_DROPPED_SUBJECT = re.compile(
    r"^(?P<adv>(?:(?:just|finally|recently|also|officially|so|and)\s+)*)"
    r"(?P<verb>got|started|moved|relocated|settled|joined|left|adopted|rescued|celebrated|switched|quit|"
    r"turned|bought|signed)\s",
    re.IGNORECASE,
)
_DROPPED_COPULA = re.compile(r"^(?P<adv>officially|finally|now|just)\s+(?=\d{1,3}\b)", re.IGNORECASE)
_CLAUSE_SPLIT = re.compile(r"(?<!\s)(?:\s*+[,\u2014]\s++(?:and |but |so )?(?=I\s)|\s*+;\s+)")


def rewrite(sentence: str) -> str:
    """`sentence` (normalized) in a form the clause patterns read; unchanged when no rule fires."""
    body = LEAD.sub("", sentence).strip()
    m = _DIAGNOSIS.match(body)
    if m:
        body = body[m.end() :]
    m2 = _AROUND_ALLERGIC.match(body)
    if m2:
        return f"I am allergic to {m2.group('o')}."
    if m:
        return body
    m3 = _DROPPED_SUBJECT.match(body)
    if m3:
        return f"I {m3.group('adv')}{m3.group('verb').lower()} {body[m3.end() :]}"
    m4 = _DROPPED_COPULA.match(body)
    if m4:
        return f"I am {body}"
    return sentence


def split_statement(sentence: str) -> list[str]:
    """Independent clauses of a statement: "A, I B" and "A; B" -> ["A", "I B"], ["A", "B"]."""
    parts = [p.strip() for p in _CLAUSE_SPLIT.split(sentence)]
    return [p for p in parts if p]
