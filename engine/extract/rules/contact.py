"""Contact details (sensitivity "pii"): email addresses and phone numbers (E.164 via phonenumbers),
taken when the sentence says they are the speaker's ("my email is", "reach me at", "call me on") or a
named person's ("Tom's email is ...")."""

from __future__ import annotations

import re

import phonenumbers

from engine.extract.rules.clauses import Clause, Collector
from engine.extract.rules.entities import is_person_name
from engine.letters import LOWER, UPPER

# the local part is bounded (RFC 5321: 64), so a search tries each start a bounded number of times
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b")
_MINE = re.compile(
    r"\b(?:my (?:\w+ )?(?:e-?mail|address|number|phone|cell|mobile|contact)|(?:reach|contact|email|e-mail|"
    r"call|text|ping|find|message) me|write to me|i am (?:at|on)|i can be reached)\b",
    re.IGNORECASE,
)
#: candidate numbers libphonenumber may reject before it gives up on a text (with its default, 65535,
#: one long run of digits and dashes is tried at every position)
MAX_PHONE_TRIES = 64
_THEIRS = re.compile(
    rf"(?P<name>(?-i:{UPPER}{LOWER}+))'s (?:\w+ )?(?:e-?mail|number|phone|cell|mobile)", re.IGNORECASE
)


def _phones(text: str) -> list[str]:
    found: list[str] = []
    for region in ("US", "GB"):
        for match in phonenumbers.PhoneNumberMatcher(text, region, max_tries=MAX_PHONE_TRIES):
            e164 = phonenumbers.format_number(match.number, phonenumbers.PhoneNumberFormat.E164)
            if e164 not in found:
                found.append(e164)
        if found:
            break
    return found


def extract(clause: Clause, out: Collector) -> None:
    s = clause.sentence
    has_email = "@" in s
    has_digits = sum(ch.isdigit() for ch in s) >= 7
    if not (has_email or has_digits):
        return
    subject, subject_name = clause.subject, clause.subject_name
    if not clause.is_self:
        subject, subject_name = subject, subject_name
    elif _MINE.search(s) is None:
        m = _THEIRS.search(s)
        if not m or not is_person_name(m.group("name")):
            return
        subject_name = m.group("name")
        subject = out.entity(subject_name, "person")
    if clause.negated or clause.plain_negation:
        return
    for email in _EMAIL.findall(s) if has_email else []:
        out.fact(clause, "email", email.lower(), confidence=0.95, sensitivity="pii", negated=False,
                 subject=subject, subject_name=subject_name)  # fmt: skip
    if has_digits:
        for phone in _phones(_EMAIL.sub(" ", s)):
            out.fact(clause, "phone", phone, confidence=0.9, sensitivity="pii", negated=False,
                     subject=subject, subject_name=subject_name)  # fmt: skip
