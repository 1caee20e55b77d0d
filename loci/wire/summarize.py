"""Where a summary came from."""

from __future__ import annotations

from typing import Literal

Origin = Literal["extractive", "llm"]
