"""Min-max normalization: (x - min) / (max - min), into [0, 1].

All-equal scores (including a single hit) map to 1.0: each is the best the channel found.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def normalize(raw: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    x = np.asarray(raw, dtype=np.float64)
    if x.size == 0:
        return np.zeros(0, dtype=np.float64)
    lo = float(x.min())
    hi = float(x.max())
    if hi - lo <= 0.0:
        return np.ones_like(x)
    out: npt.NDArray[np.float64] = (x - lo) / (hi - lo)
    return out
