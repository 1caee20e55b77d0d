"""Numbers and URLs read from LOCI_* variables: a bad value is InvalidInput naming the variable, so a
server refuses it at start with one line (never a ValueError later, nor a component quietly left
unusable)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from urllib.parse import SplitResult, urlsplit

from engine.errors import InvalidInput


def env_number(
    env: Mapping[str, str],
    name: str,
    default: float,
    *,
    positive: bool = False,
    maximum: float = math.inf,
    unit: str = "",
) -> float:
    """A finite number >= 0 (> 0 when `positive`, at most `maximum`) from `name`; empty or unset:
    `default`; `unit` names what it counts in the refusal ("hours")."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (positive and value == 0) or value > maximum:
        bound = ("> 0" if positive else ">= 0") + (f" and <= {maximum:g}" if maximum < math.inf else "")
        what = f"a number of {unit}" if unit else "a number"
        raise InvalidInput(f"{name} must be {what} {bound}, got {raw[:32]!r}", field=name)
    return value


def env_whole(env: Mapping[str, str], name: str, default: int, *, low: int = 0, note: str = "") -> int:
    """A whole number >= `low` from `name`; empty or unset: `default`; `note` follows the bound in the
    refusal ("0: no cap")."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or int(raw) < low:
        bound = f">= {low}" + (f" ({note})" if note else "")
        raise InvalidInput(f"{name} must be a whole number {bound}, got {raw[:32]!r}", field=name)
    return int(raw)


def split_url(raw: str) -> SplitResult:
    """`raw`'s parts, or an empty URL's when its port is no number or out of range (which urlsplit
    reports only when the port is read)."""
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018
    except ValueError:
        return urlsplit("")
    return parts


def env_http_url(env: Mapping[str, str], name: str) -> str | None:
    """An http(s)://host[...] URL from `name`, or None when empty or unset ("localhost:11434" has no
    scheme: every call to it would fail)."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    parts = split_url(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"{name} must be an http:// or https:// URL, got {raw[:64]!r}", field=name)
    return raw
