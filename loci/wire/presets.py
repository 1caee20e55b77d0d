"""The names of the retrieval presets and the channel weights a response reports."""

from __future__ import annotations

from typing import Literal

import msgspec

PresetName = Literal["balanced", "fast", "factual", "recent", "graphy"]


class Weights(msgspec.Struct, frozen=True, kw_only=True):
    """Channel weights (`balanced`: chosen on held-out LoCoMo conversations, docs/evaluation.md)."""

    semantic: float = 0.32
    bm25: float = 0.47
    graph_prior: float = 0.16
    recency_decay: float = 0.0
    confidence: float = 0.05

    def as_tuple(self) -> tuple[float, float, float, float, float]:
        return (self.semantic, self.bm25, self.graph_prior, self.recency_decay, self.confidence)

    def total(self) -> float:
        return float(sum(self.as_tuple()))
