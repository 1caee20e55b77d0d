"""What the routes need, built once per app and kept in `app.state.loci`."""

from __future__ import annotations

import os
from typing import Any

import msgspec

from engine.extract import Extractor, create_extractor
from engine.memory_service import MemoryService
from engine.storage.base import Store
from server.config import Settings
from server.event_stream import StreamSlots
from server.idempotency import Idempotency
from server.ratelimit import RateLimiter


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


def default_extractor() -> Extractor:
    return create_extractor("llm" if os.environ.get("LOCI_LLM_URL") else "rules")


def services_of(request: Any) -> Services:
    found = request.app.state.loci
    assert isinstance(found, Services)
    return found
