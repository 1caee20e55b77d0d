"""What the routes need, built once per app and kept in `app.state.loci`."""

from __future__ import annotations

import contextlib
import os
from typing import Any

import msgspec

from engine.deferred_events import DeferredEvents
from engine.extract import Extractor, create_extractor
from engine.memory_service import MemoryService
from engine.storage.base import Store
from server.config import Settings
from server.event_stream import StreamSlots
from server.idempotency import Idempotency
from server.ratelimit import RateLimiter
from server.stopping import Stopping


class Services(msgspec.Struct, kw_only=True):
    settings: Settings
    store: Store
    memories: MemoryService
    idempotency: Idempotency
    limiter: RateLimiter
    #: open event streams, capped per key and in all (`Settings.max_streams_per_key`, `max_streams`)
    streams: StreamSlots
    #: facts from turns (assemble ingest, /v0/extract, /v1 infer): `llm` when LOCI_LLM_URL is set
    extractor: Extractor = msgspec.field(default_factory=lambda: default_extractor())
    #: reads' `context.assembled` entries, written in batches off the request path (closed at shutdown)
    read_events: DeferredEvents | None = None
    #: set once the server is told to stop (SIGTERM/SIGINT): open event streams end at their next poll
    stopping: Stopping = msgspec.field(default_factory=Stopping)

    def flush_read_events(self) -> None:
        """Write the held read events now, so a reader of the log sees every request answered so far
        (if the store refuses them they stay held, and appear later, after the cursor)."""
        if self.read_events is not None:
            with contextlib.suppress(Exception):
                self.read_events.flush()


def default_extractor() -> Extractor:
    return create_extractor("llm" if os.environ.get("LOCI_LLM_URL") else "rules")


def services_of(request: Any) -> Services:
    found = request.app.state.loci
    assert isinstance(found, Services)
    return found
