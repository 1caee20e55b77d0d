"""Numbers read from LOCI_* variables: a bad value is InvalidInput naming the variable, so a server
refuses it at start with one line (never a ValueError later, nor a component quietly left unusable)."""

from __future__ import annotations

import math
from collections.abc import Mapping

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
