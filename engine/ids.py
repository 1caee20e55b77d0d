"""Identifiers: `mem_` + ULID for memories, `req_` + ULID for requests, `evt_` for events, `key_` for
API keys. ULIDs sort by creation time; `new_id` is monotonic within one process."""

from __future__ import annotations

import threading
import time

from ulid import ULID

_lock = threading.Lock()
_last_ms = 0
_last_rand = 0


def _monotonic_ulid() -> ULID:
    """A ULID that is strictly greater than the previous one made by this process."""
    global _last_ms, _last_rand
    import secrets

    with _lock:
        ms = int(time.time() * 1000)
        if ms <= _last_ms:
            ms = _last_ms
            rand = _last_rand + 1
        else:
            rand = secrets.randbits(79)  # leave headroom so increments never overflow 80 bits
        _last_ms, _last_rand = ms, rand
        return ULID.from_bytes(ms.to_bytes(6, "big") + rand.to_bytes(10, "big"))


def new_id(prefix: str) -> str:
    return f"{prefix}_{_monotonic_ulid()}"


def memory_id() -> str:
    return new_id("mem")


def request_id() -> str:
    return new_id("req")


def event_id() -> str:
    return new_id("evt")
