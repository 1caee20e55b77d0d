"""Coalescing concurrent embed calls into one forward pass (dynamic batching).

A query embedding with MiniLM on a CPU costs nearly the same for a few texts as for one: the forward
pass is dominated by reading the weights, not by the handful of tokens. When several requests embed
their queries at once (a server worker under concurrent load), running them one after another spends
that cost every time. `Coalescer` runs one batch at a time; a call that arrives while a batch runs
waits, and the next batch takes every text that queued meanwhile (up to `max_texts`). An idle
embedder adds no delay: a call alone runs at once, as a batch of one.

Each caller gets exactly its own rows, in order; if a batch fails, every caller in it gets the
exception. (The onnxruntime int8 encoder runs each text of a batch in its own pass, so there merging
only takes turns: a text's vector never depends on the calls it was merged with.)
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.float32]


class _Call:
    __slots__ = ("texts", "rows", "error", "done")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.rows: Rows | None = None
        self.error: BaseException | None = None
        self.done = False


class Coalescer:
    """Serializes `run` (texts -> rows) and merges the calls waiting for it into one batch.

    `max_texts` bounds a merged batch (a single call larger than that still runs, alone). Waiting
    callers sleep on a condition, not on the run itself: when a batch ends, its callers return at
    once and the oldest caller still waiting runs the next batch with everything queued by then."""

    def __init__(self, run: Callable[[list[str]], Rows], *, max_texts: int = 8) -> None:
        self._run = run
        self.max_texts = max(1, max_texts)
        self._pending: deque[_Call] = deque()
        self._cv = threading.Condition()
        self._busy = False
        #: batches run and texts embedded (for tests and the benchmark)
        self.batches = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> Rows:
        call = _Call(list(texts))
        with self._cv:
            self._pending.append(call)
            while True:
                while self._busy and not call.done:
                    self._cv.wait()
                if call.done:
                    break
                self._busy = True
                batch = self._take()
                self._cv.release()
                try:
                    self._run_batch(batch)
                finally:
                    self._cv.acquire()
                    self._busy = False
                    self._cv.notify_all()
        if call.error is not None:
            raise call.error
        assert call.rows is not None
        return call.rows

    def _take(self) -> list[_Call]:
        """The oldest waiting calls, at least one, up to `max_texts` texts in all (lock held)."""
        batch = [self._pending.popleft()]
        size = len(batch[0].texts)
        while self._pending and size + len(self._pending[0].texts) <= self.max_texts:
            nxt = self._pending.popleft()
            batch.append(nxt)
            size += len(nxt.texts)
        return batch

    def _run_batch(self, batch: list[_Call]) -> None:
        flat = [t for c in batch for t in c.texts]
        try:
            rows = self._run(flat)
        except BaseException as exc:  # every caller of the batch sees the failure
            for c in batch:
                c.error, c.done = exc, True
            return
        start = 0
        for c in batch:
            c.rows = rows[start : start + len(c.texts)]
            start += len(c.texts)
            c.done = True
        self.batches += 1
        self.texts += len(flat)
