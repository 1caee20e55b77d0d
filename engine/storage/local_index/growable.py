"""An append-only numpy column that grows by doubling (amortized O(1) appends, views without copies)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


class Growable:
    def __init__(self, dtype: Any, fill: Any = 0, capacity: int = 1024) -> None:
        self._data: npt.NDArray[Any] = np.full(capacity, fill, dtype=dtype)
        self._fill = fill
        self.size = 0

    def _reserve(self, extra: int) -> None:
        need = self.size + extra
        if need > self._data.shape[0]:
            cap = max(need, 2 * self._data.shape[0])
            grown = np.full(cap, self._fill, dtype=self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown

    def append(self, value: Any) -> int:
        self._reserve(1)
        self._data[self.size] = value
        self.size += 1
        return self.size - 1

    def extend(self, values: Any) -> None:
        arr = np.asarray(values, dtype=self._data.dtype)
        self._reserve(arr.shape[0])
        self._data[self.size : self.size + arr.shape[0]] = arr
        self.size += arr.shape[0]

    @property
    def view(self) -> npt.NDArray[Any]:
        """The used part (a view: valid until the next append)."""
        return self._data[: self.size]

    def __setitem__(self, index: int, value: Any) -> None:
        self._data[: self.size][index] = value
