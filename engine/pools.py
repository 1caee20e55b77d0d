"""`LazyPool`: a thread pool created on first use, so a process that never needs it starts no threads."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor


class LazyPool:
    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def get(self) -> ThreadPoolExecutor:
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self._max_workers, thread_name_prefix=self._prefix)
                pool = self._pool
        return pool
