"""A deterministic bag-of-words embedder for tests: fast and exact, with no model.

Each lowercased word token is hashed to a signed bucket, so texts that share words have positive
cosine similarity. Not for production use: `LOCI_EMBEDDER=hash` is for tests and quick demos.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

_TOKEN = re.compile(r"[a-z0-9]+")


class HashEmbedder:
    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.model = f"hash:{dim}"

    def _row(self, text: str) -> npt.NDArray[np.float32]:
        row = np.zeros(self.dim, dtype=np.float32)
        for token in _TOKEN.findall(text.lower()):
            digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            sign = 1.0 if digest[4] & 1 else -1.0
            row[bucket] += sign
        norm = float(np.linalg.norm(row))
        if norm > 0:
            row /= norm
        return row

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._row(t) for t in texts])
