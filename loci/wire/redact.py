"""The request's redaction policy and the report a response carries.

`RedactionPolicy` mirrors the API's `policy` object (`pii_redaction`, `egress_rehydration`).
`RedactionReport` is the API's Redaction (`applied`, `rules`) plus `placeholders` (placeholder ->
original value), present only when `egress_rehydration="allowed"`; encoded with `omit_defaults`, so
the key is absent otherwise and original values never leave under `none`.
"""

from __future__ import annotations

from typing import Literal

import msgspec

PiiRedaction = Literal["auto", "off"]
EgressRehydration = Literal["none", "allowed"]


class RedactionPolicy(msgspec.Struct, frozen=True, kw_only=True):
    pii_redaction: PiiRedaction = "auto"
    egress_rehydration: EgressRehydration = "none"


class RedactionReport(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    applied: bool  # at least one value was replaced in this response
    rules: list[str]  # names of the rules that replaced something, sorted ("pii" = whole-value fallback)
    placeholders: dict[str, str] | None = None  # only with egress_rehydration="allowed"
