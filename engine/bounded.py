"""`BoundedMap`: a thread-safe map that keeps the `size` entries written last (or, with `weigh`, the
entries written last whose weights sum to at most `size`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedMap(Generic[K, V]):
    def __init__(self, size: int, *, weigh: Callable[[V], int] | None = None) -> None:
        self._size = size
        self._weigh = weigh
        self._weight = 0
        self._lock = threading.Lock()
        self._items: OrderedDict[K, V] = OrderedDict()

    def _of(self, value: V) -> int:
        return 1 if self._weigh is None else self._weigh(value)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self._weight -= self._of(old)
            self._items[key] = value
            self._items.move_to_end(key)
            self._weight += self._of(value)
            while self._weight > self._size and self._items:
                self._weight -= self._of(self._items.popitem(last=False)[1])

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._items.get(key)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weight = 0
