"""What every redaction rule shares: the `Detection` it reports and the `Rule` protocol.

A rule finds values in one string and reports each as a `Detection`: the span, the text as written,
and a normalized `key` (e.g. a phone number in E.164, a card number's digits) so that the same value
written two ways gets the same placeholder within one `Redactor`.
"""

from __future__ import annotations

from typing import Protocol

import msgspec


class Detection(msgspec.Struct, frozen=True, kw_only=True):
    rule: str  # the rule's name, e.g. "email", "ipv4"
    start: int
    end: int  # exclusive
    value: str  # the text as written, text[start:end]
    key: str  # normalized value: equal keys share one placeholder


class Rule(Protocol):
    """A named detector. `label` is the placeholder stem: `[<label>_<n>]`."""

    name: str
    label: str

    def detect(self, text: str) -> list[Detection]: ...
