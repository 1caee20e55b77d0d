"""Strings in query columns: PostgreSQL `text` cannot hold NUL (U+0000); Python strings can.

Every string the store writes to a column or passes as a query parameter goes through `enc`, and
every string read back from a column (not from a `doc`) through `dec`. The code

    U+0000 -> U+0001 U+0001,   U+0001 -> U+0001 U+0002,   any other character unchanged

is injective, prefix-free and order-preserving per character, so equality and the code-point order
of the "C" collation (ids are declared COLLATE "C") are those of the original Python strings. Strings
without U+0000/U+0001 (all real data) pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable


def enc(value: str) -> str:
    if "\x00" not in value and "\x01" not in value:
        return value
    return value.replace("\x01", "\x01\x02").replace("\x00", "\x01\x01")


def enc_opt(value: str | None) -> str | None:
    return None if value is None else enc(value)


def enc_all(values: Iterable[str]) -> list[str]:
    return [enc(v) for v in values]


def dec(value: str) -> str:
    if "\x01" not in value:
        return value
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\x01" and i + 1 < len(value):
            out.append("\x00" if value[i + 1] == "\x01" else "\x01")
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)
