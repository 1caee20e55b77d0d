"""API keys, idempotency records and the event log on PostgreSQL.

Each record is kept whole as msgspec JSON in `doc` (exact round trip, bytes as base64) beside the
columns its queries need.

Events: each row gets the org's next number, `org_seq` (a trigger, migration 4: max + 1 within the org;
the log is append-only), which is the cursor's position. Two transactions numbering one org at once
would read the same max, and one that inserts first may commit last, so a reader paging with `after`
could skip it. `append_events` therefore takes a per-org transaction-scoped advisory lock before
inserting: within one org, numbers are handed out in commit order, and the cursor never skips.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec
import psycopg

from engine.errors import Conflict
from engine.models import ApiKey, Event, IdempotencyRecord
from engine.storage.base import EventQuery
from engine.storage.postgres.pgtext import enc, enc_all, enc_opt
from engine.storage.postgres.where import Where
from engine.timeutil import to_utc

_encoder = msgspec.json.Encoder()
_key_decoder = msgspec.json.Decoder(ApiKey)
_idem_decoder = msgspec.json.Decoder(IdempotencyRecord)
_event_decoder = msgspec.json.Decoder(Event)


def _json(value: msgspec.Struct) -> str:
    return _encoder.encode(value).decode("utf-8")


def lock_name(conn: psycopg.Connection[Any], *parts: str) -> None:
    """A transaction-scoped advisory lock on a name made of `parts` (released at commit/rollback)."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", ("\x1f".join(enc_all(parts)),))


# --- API keys -------------------------------------------------------------------------------------
def create_api_key(conn: psycopg.Connection[Any], key: ApiKey) -> None:
    key = msgspec.structs.replace(
        key,
        created_at=to_utc(key.created_at),
        revoked_at=to_utc(key.revoked_at) if key.revoked_at is not None else None,
    )
    cur = conn.execute(
        "INSERT INTO api_keys (key_id, org_id, key_hash, created_at, doc) VALUES (%s, %s, %s, %s, %s)"
        " ON CONFLICT DO NOTHING",
        (enc(key.key_id), enc(key.org_id), enc(key.key_hash), key.created_at, _json(key)),
    )
    if cur.rowcount == 0:
        raise Conflict(f"an api key with id {key.key_id!r} or the same hash already exists")


def find_api_key(conn: psycopg.Connection[Any], key_hash: str) -> ApiKey | None:
    row = conn.execute("SELECT doc FROM api_keys WHERE key_hash = %s", (enc(key_hash),)).fetchone()
    return _key_decoder.decode(row[0]) if row else None


def list_api_keys(conn: psycopg.Connection[Any], org_id: str | None) -> list[ApiKey]:
    if org_id is None:
        rows = conn.execute("SELECT doc FROM api_keys ORDER BY created_at, key_id").fetchall()
    else:
        rows = conn.execute(
            "SELECT doc FROM api_keys WHERE org_id = %s ORDER BY created_at, key_id", (enc(org_id),)
        ).fetchall()
    return [_key_decoder.decode(doc) for (doc,) in rows]


def revoke_api_key(conn: psycopg.Connection[Any], key_id: str, at: datetime) -> bool:
    """Set revoked_at (kept if already revoked); False only when the key is unknown."""
    row = conn.execute("SELECT doc FROM api_keys WHERE key_id = %s FOR UPDATE", (enc(key_id),)).fetchone()
    if row is None:
        return False
    key = _key_decoder.decode(row[0])
    if key.revoked_at is not None:
        return True
    key = msgspec.structs.replace(key, revoked_at=to_utc(at))
    conn.execute("UPDATE api_keys SET doc = %s WHERE key_id = %s", (_json(key), enc(key_id)))
    return True


# --- idempotency ----------------------------------------------------------------------------------
def get_idempotency(
    conn: psycopg.Connection[Any], org_id: str, key: str, now: datetime
) -> IdempotencyRecord | None:
    row = conn.execute(
        "SELECT doc FROM idempotency WHERE org_id = %s AND key = %s AND expires_at > %s",
        (enc(org_id), enc(key), to_utc(now)),
    ).fetchone()
    return _idem_decoder.decode(row[0]) if row else None


def list_idempotency(
    conn: psycopg.Connection[Any], org_id: str, now: datetime, after: str | None, limit: int
) -> list[IdempotencyRecord]:
    """Unexpired records of the org in key order (bytewise, as the other stores order them)."""
    rows = conn.execute(
        'SELECT doc FROM idempotency WHERE org_id = %s AND key COLLATE "C" > %s AND expires_at > %s'
        ' ORDER BY key COLLATE "C" LIMIT %s',
        (enc(org_id), enc(after) if after is not None else "", to_utc(now), max(limit, 0)),
    ).fetchall()
    return [_idem_decoder.decode(doc) for (doc,) in rows]


def put_idempotency(conn: psycopg.Connection[Any], record: IdempotencyRecord) -> None:
    record = msgspec.structs.replace(
        record, created_at=to_utc(record.created_at), expires_at=to_utc(record.expires_at)
    )
    conn.execute(
        "INSERT INTO idempotency (org_id, key, expires_at, doc) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (org_id, key) DO UPDATE SET expires_at = EXCLUDED.expires_at, doc = EXCLUDED.doc",
        (enc(record.org_id), enc(record.key), record.expires_at, _json(record)),
    )


# --- events ---------------------------------------------------------------------------------------
def append_events(conn: psycopg.Connection[Any], events: Sequence[Event]) -> None:
    if not events:
        return
    events = [msgspec.structs.replace(e, at=to_utc(e.at)) for e in events]
    for org in sorted({e.org_id for e in events}):  # sorted: two writers never lock in opposite order
        lock_name(conn, "loci.events", org)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO events (org_id, type, entity_id, at, doc) VALUES (%s, %s, %s, %s, %s)",
            [(enc(e.org_id), enc(e.type), enc_opt(e.entity_id), e.at, _json(e)) for e in events],
        )


def list_events(conn: psycopg.Connection[Any], org_id: str, q: EventQuery) -> list[tuple[int, Event]]:
    if q.memory_id is not None and "\x00" in q.memory_id:
        return []  # no memory id holds NUL (and a text parameter cannot)
    w = Where().add("org_id = %(org)s", org=enc(org_id))
    if q.type is not None:
        w.add("type = %(type)s", type=enc(q.type))
    if q.entity_id is not None:
        w.add("entity_id = %(entity)s", entity=enc(q.entity_id))
    if q.memory_id is not None:  # no memory_id column: read it from the JSON doc (json, not jsonb,
        w.add("(doc::json ->> 'memory_id') = %(memory)s", memory=q.memory_id)  # accepts \u0000)
    if q.since is not None:
        w.add("at >= %(since)s", since=to_utc(q.since))
    if q.after is not None:
        w.add("org_seq > %(after)s", after=q.after)
    stmt = f"SELECT org_seq, doc FROM events WHERE {w.sql} ORDER BY org_seq LIMIT %(limit)s"
    params = {**w.params, "limit": max(q.limit, 0)}
    rows = conn.execute(stmt, params).fetchall()
    return [(int(seq), _event_decoder.decode(doc)) for seq, doc in rows]
