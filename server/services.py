"""What the routes need, built once per app and kept in `app.state.loci`."""

from __future__ import annotations

from typing import Any

import msgspec

from engine.memories import MemoryService
from engine.storage.base import Store
from server.config import Settings
from server.idempotency import Idempotency
from server.ratelimit import RateLimiter


class Services(msgspec.Struct, kw_only=True):
    settings: Settings
    store: Store
    memories: MemoryService
    idempotency: Idempotency
    limiter: RateLimiter


def services_of(request: Any) -> Services:
    found = request.app.state.loci
    assert isinstance(found, Services)
    return found
