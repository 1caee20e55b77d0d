"""Idempotency-Key handling, reusable by every writing route.

`Idempotency.run(...)` executes `work` at most once per (org, key): the fingerprint is a hash of the
method, the path (with query) and the body as the route read it (`read_body`: its request type with
every default filled in, so a retry that spells out a default, orders its keys otherwise or writes 1 for
1.0 is the same request). Routes without a typed body hash the JSON document (`canonical_body`: keys
sorted, no insignificant whitespace). The same key and body replays the first response (same status and
body, no second write); another body is 409 conflict. Records stored by earlier versions hold a hash of
the JSON document (`v2:`) or of the raw bytes, and are compared that way until they expire. The record is stored in the SAME
`store.transaction()` as the write, so the two commit together; without a key the work still runs in one
transaction, so a request that fails part-way leaves nothing behind. Concurrent duplicates are serialized
by a per-key lock in process; across processes a lost race on the record rolls the write back and
replays the winner's response. Only successful responses are recorded: a failed request can be retried.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Callable
from datetime import timedelta
from functools import cached_property
from typing import Any

import msgspec

from engine.errors import Conflict, InvalidInput
from engine.models import IdempotencyRecord
from engine.storage.base import Store
from engine.timeutil import Clock, utcnow

MAX_KEY_LENGTH = 128
HEADER = "Idempotency-Key"


class StoredResponse(msgspec.Struct, kw_only=True):
    status_code: int
    body: bytes
    content_type: str = "application/json"
    replayed: bool = False


#: the prefix of fingerprints over the body as its route read it (defaults filled in)
FINGERPRINT_VERSION = "v3:"
#: the prefix of fingerprints over the JSON document; a stored fingerprint with neither is a raw one
DOCUMENT_VERSION = "v2:"


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


def canonical_body(body: bytes) -> bytes:
    """The body as the server reads it: a JSON document re-encoded with sorted keys and no whitespace
    (strings and numbers as parsed, so 1.10 and 1.1 agree while 1 and 1.0 do not), tagged `J`; an empty
    body as `E`; anything else (never reaches a write: JSON routes refuse it) as sent, tagged `R`."""
    if not body.strip():
        return b"E"
    try:
        data = msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return b"R" + body
    return b"J" + msgspec.json.encode(data, order="sorted")


def read_body(parsed: Any) -> bytes:
    """The body as its route read it (a request Struct, or a tuple of what the route parsed), every
    field written out, defaults included, in one order; tagged `S`."""
    return b"S" + msgspec.json.encode(parsed, order="sorted")


def fingerprint(method: str, path: str, body: bytes, agent: str | None = None, *, parsed: Any = None) -> str:
    """What identifies a request under one Idempotency-Key (see the module docstring): over `parsed`
    when the route read the body into its type, else over the JSON document; the `X-Service-Agent` it
    was sent as is part of it, since the agent scopes what the request reads and writes."""
    read = canonical_body(body) if parsed is None else read_body(parsed)
    parts = [method.upper().encode(), path.encode(), read]
    if agent is not None:
        parts.append(b"agent:" + agent.encode())
    return (DOCUMENT_VERSION if parsed is None else FINGERPRINT_VERSION) + _digest(*parts)


def raw_fingerprint(method: str, path: str, body: bytes) -> str:
    """The fingerprint of records stored before `FINGERPRINT_VERSION`: a hash of the raw bytes."""
    return _digest(method.upper().encode(), path.encode(), body)


class RequestPrint:
    """One request's fingerprint, computed once when first needed; `matches` compares it with a stored
    record's."""

    def __init__(
        self, method: str, path: str, body: bytes, agent: str | None = None, *, parsed: Any = None
    ) -> None:
        self.method = method
        self.path = path
        self.body = body
        self.agent = agent
        self.parsed = parsed

    @cached_property
    def value(self) -> str:
        return fingerprint(self.method, self.path, self.body, self.agent, parsed=self.parsed)

    def matches(self, stored: str) -> bool:
        if stored.startswith(FINGERPRINT_VERSION):
            return hmac.compare_digest(stored, self.value)
        if stored.startswith(DOCUMENT_VERSION):
            return hmac.compare_digest(stored, fingerprint(self.method, self.path, self.body, self.agent))
        return hmac.compare_digest(stored, raw_fingerprint(self.method, self.path, self.body))


def check_key(key: str) -> str:
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise InvalidInput(
            f"{HEADER} must be 1..{MAX_KEY_LENGTH} printable characters",
            field=HEADER,
            details={"max_length": MAX_KEY_LENGTH},
        )
    return key


class Idempotency:
    def __init__(
        self, store: Store, *, ttl: timedelta = timedelta(hours=24), clock: Clock = utcnow, stripes: int = 64
    ) -> None:
        self.store = store
        self.ttl = ttl
        self.clock = clock
        self._locks = [threading.Lock() for _ in range(stripes)]

    def _lock_for(self, org_id: str, key: str) -> threading.Lock:
        digest = hashlib.blake2b(f"{org_id}\0{key}".encode(), digest_size=4).digest()
        return self._locks[int.from_bytes(digest, "big") % len(self._locks)]

    @staticmethod
    def _replay(record: IdempotencyRecord, fp: RequestPrint) -> StoredResponse:
        if not fp.matches(record.fingerprint):
            raise Conflict(f"{HEADER} was already used with another request", details={"field": HEADER})
        return StoredResponse(
            status_code=record.status_code, body=record.body, content_type=record.content_type, replayed=True
        )

    def lookup(self, org_id: str, key: str, fp: RequestPrint) -> StoredResponse | None:
        """The stored response to replay, if this key was used already (409 if with another request).
        A fast path only: `run` checks again inside its transaction."""
        check_key(key)
        found = self.store.get_idempotency(org_id, key, self.clock())
        return None if found is None else self._replay(found, fp)

    def run(
        self,
        org_id: str,
        key: str | None,
        fp: RequestPrint,
        work: Callable[[], StoredResponse],
    ) -> StoredResponse:
        """Run `work` (which writes through the same store) in one transaction, once per (org, key)."""
        if key is None:
            with self.store.transaction():
                return work()
        check_key(key)
        with self._lock_for(org_id, key):
            try:
                with self.store.transaction():
                    now = self.clock()
                    found = self.store.get_idempotency(org_id, key, now)
                    if found is not None:
                        return self._replay(found, fp)
                    result = work()
                    self.store.put_idempotency(
                        IdempotencyRecord(
                            org_id=org_id,
                            key=key,
                            fingerprint=fp.value,
                            status_code=result.status_code,
                            body=result.body,
                            content_type=result.content_type,
                            created_at=now,
                            expires_at=now + self.ttl,
                        )
                    )
                    return result
            except Conflict:
                # another process recorded this key first; our write rolled back: replay theirs
                found = self.store.get_idempotency(org_id, key, self.clock())
                if found is None:
                    raise
                return self._replay(found, fp)
