"""Numbers and URLs read from LOCI_* variables: a bad value is InvalidInput naming the variable, so a
server refuses it at start with one line (never a ValueError later, nor a component quietly left
unusable)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from urllib.parse import urlsplit

from engine.errors import InvalidInput


def env_number(env: Mapping[str, str], name: str, default: float, *, positive: bool = False) -> float:
    """A finite number >= 0 (> 0 when `positive`) from `name`; empty or unset: `default`."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise InvalidInput(f"{name} must be a number {bound}, got {raw[:32]!r}", field=name)
    return value


def env_whole(env: Mapping[str, str], name: str, default: int, *, low: int = 0) -> int:
    """A whole number >= `low` from `name`; empty or unset: `default`."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or int(raw) < low:
        raise InvalidInput(f"{name} must be a whole number >= {low}, got {raw[:32]!r}", field=name)
    return int(raw)


def env_http_url(env: Mapping[str, str], name: str) -> str | None:
    """An http(s)://host[...] URL from `name`, or None when empty or unset ("localhost:11434" has no
    scheme: every call to it would fail)."""
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    try:
        parts = urlsplit(raw)
        parts.port  # noqa: B018 (raises ValueError on a port that is no number or out of range)
    except ValueError:
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"{name} must be an http:// or https:// URL, got {raw[:64]!r}", field=name)
    return raw
