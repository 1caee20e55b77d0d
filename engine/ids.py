"""Identifiers: `mem_` + ULID for memories, `req_` + ULID for requests, `evt_` for events, `key_` for
API keys. ULIDs sort by creation time; `new_id` is monotonic within one process."""

from __future__ import annotations

import threading
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = 0
_last_rand = 0


def _monotonic_int() -> int:
    """The 128 bits of the next monotonic ULID: 48 bits of milliseconds, 80 random (incremented within
    a millisecond)."""
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
        return (ms << 80) | rand


def _crockford(value: int) -> str:
    """The 26-character Crockford base32 form of a 128-bit ULID (what str(ULID) gives, without its
    per-call object and byte conversions: ids are made twice per stored memory)."""
    chars = [""] * 26
    for i in range(25, -1, -1):
        chars[i] = _CROCKFORD[value & 31]
        value >>= 5
    return "".join(chars)


def new_id(prefix: str) -> str:
    return f"{prefix}_{_crockford(_monotonic_int())}"


def memory_id() -> str:
    return new_id("mem")


def request_id() -> str:
    return new_id("req")


def event_id() -> str:
    return new_id("evt")
