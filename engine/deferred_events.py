"""Log entries that no acknowledged write depends on (a read's `context.assembled`), appended off the
request path in batches instead of one store transaction per read.

    log = DeferredEvents(store)
    log.add(event)                       # returns at once (the first starts the writer thread)
    log.flush()                          # what is held, appended now (readers of the log call it first)
    log.close()                          # flush, then stop: the server's shutdown

The writer thread appends what is held (`Store.append_events(durable=False)`, one call per batch, in
the order the events were added) `delay` seconds after the first of them, or as soon as `max_held` are
held. A flush that fails keeps its events for the next one (up to `limit`; past it the oldest are dropped
and logged), so a read never fails because its log entry could not be written. A clean stop loses
nothing; a process killed outright loses what it held, at most `delay` seconds of reads (the store's
`durable=False` may already lose those to an OS crash).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from engine.models import Event
from engine.storage.base import Store

log = logging.getLogger("loci.events")

DELAY = 0.5  # seconds an event may wait for its batch
MAX_HELD = 256  # a batch this large is written at once


class DeferredEvents:
    def __init__(self, store: Store, *, delay: float = DELAY, max_held: int = MAX_HELD) -> None:
        self.store = store
        self.delay = delay
        self.max_held = max(1, max_held)
        #: events kept while the store refuses them; beyond this the oldest are dropped
        self.limit = self.max_held * 64
        self.dropped = 0
        self._held: list[Event] = []
        self._cv = threading.Condition()
        self._flushing = threading.Lock()  # one batch at a time: the log keeps the order of `add`
        self._closed = False
        self._thread: threading.Thread | None = None  # started by the first `add`

    def add(self, event: Event) -> None:
        """Hold `event` for the next batch (appended at once if this log is closed)."""
        with self._cv:
            if not self._closed:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="loci-deferred-events", daemon=True
                    )
                    self._thread.start()
                self._held.append(event)
                if len(self._held) == 1 or len(self._held) >= self.max_held:
                    self._cv.notify_all()
                return
        self.store.append_events([event], durable=False)

    def held(self) -> int:
        with self._cv:
            return len(self._held)

    def flush(self) -> None:
        """Append every event held now (in one store call); on failure they stay held and it raises."""
        with self._flushing:
            with self._cv:
                batch, self._held = self._held, []
            if batch:
                try:
                    self.store.append_events(batch, durable=False)
                except BaseException:
                    self._keep(batch)
                    raise

    def _keep(self, batch: Sequence[Event]) -> None:
        """Put a batch that could not be written back in front of the events added since."""
        with self._cv:
            self._held[:0] = batch
            over = len(self._held) - self.limit
            if over > 0:
                del self._held[:over]
                self.dropped += over
                log.error("%d context events dropped: the store refused them for too long", over)

    def _wait_for_batch(self) -> bool:
        """Block until a batch is due (`delay` after its first event, or full); False once closed."""
        with self._cv:
            while not self._held and not self._closed:
                self._cv.wait()
            due = time.monotonic() + self.delay
            while not self._closed and len(self._held) < self.max_held:
                left = due - time.monotonic()
                if left <= 0:
                    break
                self._cv.wait(left)
            return not self._closed

    def _run(self) -> None:
        while self._wait_for_batch():
            try:
                self.flush()
            except Exception as exc:  # kept for the next batch; the reads themselves succeeded
                log.warning("context events not written yet (%s); retrying", type(exc).__name__)
                with self._cv:  # no busy loop while the store is down
                    self._cv.wait(self.delay)

    def close(self) -> None:
        """Stop the writer thread and append what is held; later events are appended one by one."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
            thread = self._thread
        if thread is not None and threading.current_thread() is not thread:
            thread.join()
        self.flush()
