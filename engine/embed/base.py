"""The Embedder protocol. Implementations live one per module and are chosen by name through
`engine.embed.registry` (`minilm`, `openai`, `hash`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt


@runtime_checkable
class Embedder(Protocol):
    #: identifies the vector space; part of the cache key (e.g. "minilm:all-MiniLM-L6-v2")
    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One L2-normalized float32 row per text. Raises engine.errors.Unavailable on failure."""
        ...
