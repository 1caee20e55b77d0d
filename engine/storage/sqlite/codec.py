"""Rows <-> records for the SQLite store. Exact round trip:

- datetimes as INTEGER microseconds UTC (`to_micros` / `from_micros`), so they return aware UTC;
- `object` always as msgspec JSON text ("null" for None), which keeps str/int/float/bool/dict apart
  (JSON `true` is not `1`); non-finite floats are not representable in JSON (they would become null);
- metadata, provenance, tags as JSON; `keys` as JSON or SQL NULL, so None and [] stay apart.
"""

from __future__ import annotations

from typing import Any

import msgspec

from engine.models import ApiKey, Event, IdempotencyRecord, Memory
from engine.timeutil import from_micros, to_micros

MEMORY_COLUMNS: tuple[str, ...] = (
    "org_id",
    "memory_id",
    "namespace",
    "agent_id",
    "entity_id",
    "type",
    "text",
    "metadata",
    "tags",
    "ts",
    "archived",
    "sensitivity",
    "subject",
    "predicate",
    "object",
    "object_type",
    "unit",
    "keys",
    "valid_from",
    "valid_to",
    "confidence",
    "status",
    "provenance",
    "created_at",
    "updated_at",
)
MEMORY_SELECT = ", ".join(MEMORY_COLUMNS)
MEMORY_INSERT = (
    f"INSERT OR REPLACE INTO memories ({MEMORY_SELECT}) VALUES ({', '.join('?' * len(MEMORY_COLUMNS))})"
)

_enc = msgspec.json.Encoder()
_dec_any = msgspec.json.Decoder()
_dec_dict = msgspec.json.Decoder(dict[str, Any])
_dec_strs = msgspec.json.Decoder(list[str])


def _json(value: Any) -> str:
    return _enc.encode(value).decode("utf-8")


def _micros(value: Any) -> int | None:
    return None if value is None else to_micros(value)


def _time(value: int | None) -> Any:
    return None if value is None else from_micros(value)


def memory_row(m: Memory) -> tuple[Any, ...]:
    return (
        m.org_id,
        m.memory_id,
        m.namespace,
        m.agent_id,
        m.entity_id,
        m.type,
        m.text,
        _json(m.metadata),
        _json(m.tags),
        to_micros(m.timestamp),
        int(m.archived),
        m.sensitivity,
        m.subject,
        m.predicate,
        _json(m.object),
        m.object_type,
        m.unit,
        None if m.keys is None else _json(m.keys),
        _micros(m.valid_from),
        _micros(m.valid_to),
        m.confidence,
        m.status,
        _json(m.provenance),
        to_micros(m.created_at),
        to_micros(m.updated_at),
    )


def row_memory(r: tuple[Any, ...]) -> Memory:
    return Memory(
        org_id=r[0],
        memory_id=r[1],
        namespace=r[2],
        agent_id=r[3],
        entity_id=r[4],
        type=r[5],
        text=r[6],
        metadata=_dec_dict.decode(r[7]),
        tags=_dec_strs.decode(r[8]),
        timestamp=from_micros(r[9]),
        archived=bool(r[10]),
        sensitivity=r[11],
        subject=r[12],
        predicate=r[13],
        object=_dec_any.decode(r[14]),
        object_type=r[15],
        unit=r[16],
        keys=None if r[17] is None else _dec_strs.decode(r[17]),
        valid_from=_time(r[18]),
        valid_to=_time(r[19]),
        confidence=r[20],
        status=r[21],
        provenance=_dec_dict.decode(r[22]),
        created_at=from_micros(r[23]),
        updated_at=from_micros(r[24]),
    )


API_KEY_SELECT = "key_id, org_id, key_hash, scopes, name, created_at, revoked_at"


def api_key_row(k: ApiKey) -> tuple[Any, ...]:
    return (
        k.key_id,
        k.org_id,
        k.key_hash,
        _json(k.scopes),
        k.name,
        to_micros(k.created_at),
        _micros(k.revoked_at),
    )


def row_api_key(r: tuple[Any, ...]) -> ApiKey:
    return ApiKey(
        key_id=r[0],
        org_id=r[1],
        key_hash=r[2],
        scopes=_dec_strs.decode(r[3]),
        name=r[4],
        created_at=from_micros(r[5]),
        revoked_at=_time(r[6]),
    )


IDEMPOTENCY_SELECT = "org_id, key, fingerprint, status_code, body, content_type, created_at, expires_at"


def idempotency_row(i: IdempotencyRecord) -> tuple[Any, ...]:
    return (
        i.org_id,
        i.key,
        i.fingerprint,
        i.status_code,
        bytes(i.body),
        i.content_type,
        to_micros(i.created_at),
        to_micros(i.expires_at),
    )


def row_idempotency(r: tuple[Any, ...]) -> IdempotencyRecord:
    return IdempotencyRecord(
        org_id=r[0],
        key=r[1],
        fingerprint=r[2],
        status_code=r[3],
        body=bytes(r[4]),
        content_type=r[5],
        created_at=from_micros(r[6]),
        expires_at=from_micros(r[7]),
    )


EVENT_SELECT = "org_seq, event_id, org_id, type, at, memory_id, entity_id, data"


def event_row(e: Event) -> tuple[Any, ...]:
    return (e.event_id, e.org_id, e.type, to_micros(e.at), e.memory_id, e.entity_id, _json(e.data))


def row_event(r: tuple[Any, ...]) -> tuple[int, Event]:
    return r[0], Event(
        event_id=r[1],
        org_id=r[2],
        type=r[3],
        at=from_micros(r[4]),
        memory_id=r[5],
        entity_id=r[6],
        data=_dec_dict.decode(r[7]),
    )
