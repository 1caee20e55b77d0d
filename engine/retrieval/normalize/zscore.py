"""Z-score normalization: (x - mean) / std (population std, ddof=0). Values are unbounded and
centred on 0. All-equal scores (zero spread, including a single hit) map to 0.0."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def normalize(raw: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    x = np.asarray(raw, dtype=np.float64)
    if x.size == 0:
        return np.zeros(0, dtype=np.float64)
    std = float(x.std())
    if std <= 0.0:
        return np.zeros_like(x)
    out: npt.NDArray[np.float64] = (x - float(x.mean())) / std
    return out
