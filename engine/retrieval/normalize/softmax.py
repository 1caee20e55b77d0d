"""Softmax normalization: exp(x - max) / sum(exp(x - max)); values in (0, 1] summing to 1.

Shifting by the max keeps exp() from overflowing and does not change the result."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def normalize(raw: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    x = np.asarray(raw, dtype=np.float64)
    if x.size == 0:
        return np.zeros(0, dtype=np.float64)
    e = np.exp(x - float(x.max()))
    out: npt.NDArray[np.float64] = e / float(e.sum())
    return out
