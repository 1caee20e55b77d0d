"""Memory rows: encoding a `Memory` into its columns, decoding `doc`, and the memory queries.

The record of truth is `doc`, the msgspec JSON of the whole Memory with every datetime normalized to
UTC; it round-trips exactly (int vs float in `object`, microseconds). The other columns are copies
for filtering and indexes.
"""

from __future__ import annotations

import functools
import operator
import string
import types
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec
import psycopg

from engine.models import Memory, speaker_name, text_hash
from engine.storage.base import ListQuery
from engine.storage.listing import ascii_lower
from engine.storage.postgres.pgtext import enc, enc_all, enc_opt
from engine.storage.postgres.where import Where
from engine.storage.tokenize import terms
from engine.timeutil import to_utc

_encoder = msgspec.json.Encoder()


def _unconstrained(tp: Any) -> Any:
    """`tp` without msgspec constraints or enumerations, inside unions and lists too."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _unconstrained(get_args(tp)[0])
    if origin is Literal:
        return str
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, [_unconstrained(a) for a in get_args(tp)])
    if origin is list:
        return list[_unconstrained(get_args(tp)[0])]  # type: ignore[misc]
    return tp


def _field(f: msgspec.structs.FieldInfo) -> tuple[Any, ...]:
    if f.default_factory is not msgspec.NODEFAULT:
        return (f.name, _unconstrained(f.type), msgspec.field(default_factory=f.default_factory))
    if f.default is not msgspec.NODEFAULT:
        return (f.name, _unconstrained(f.type), f.default)
    return (f.name, _unconstrained(f.type))


# Memory's fields without their constraints: what was stored is returned as it was, even a record built
# in code that would not pass the wire validation (Memory() itself does not validate).
_StoredMemory = msgspec.defstruct(
    "_StoredMemory", [_field(f) for f in msgspec.structs.fields(Memory)], kw_only=True
)

_decoder = msgspec.json.Decoder(_StoredMemory)
_valid_decoder = msgspec.json.Decoder(Memory)

COLUMNS = (
    "org_id",
    "memory_id",
    "namespace",
    "agent_id",
    "entity_id",
    "type",
    "text",
    "text_hash",
    "tags",
    "ts",
    "archived",
    "subject",
    "object_entity",
    "valid_from",
    "valid_to",
    "status",
    "doc",
    "kw",
    "speaker",
)
#: the inline vector columns (migration 3), after COLUMNS
INLINE_COLUMNS = ("embedding_model", "embedding")
# The inline copy comes from `embeddings` in the same statement (NULL when that vector is not stored
# yet, or too wide for this row's index entry); an update re-reads it, so a new text gets its vector.
_UPSERT = (
    f"INSERT INTO memories ({', '.join(COLUMNS + INLINE_COLUMNS)}) VALUES ({', '.join('%s' for _ in COLUMNS)},"
    " %s, (SELECT e.embedding FROM embeddings e WHERE e.model = %s AND e.text_hash = %s AND e.dims <= %s))"
    " ON CONFLICT (org_id, memory_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS[2:] + INLINE_COLUMNS)
)

# A btree entry (the entity index INCLUDEs the inline vector) holds at most 2,704 bytes on 8 KB pages.
BTREE_ENTRY_MAX = 2704
# Tuple header, null bitmap, varlena headers and alignment padding of the index entry, bounded high
# (the 13 columns need ~120 bytes of it), plus the longest status ('superseded') and type ('document')
# so a later status change can never make the entry too big.
_ENTRY_FIXED = 256 + len("superseded") + len("document")


def inline_dims_max(m: Memory, model: str) -> int:
    """The most dimensions an inline vector of `m` may have for its entity-index entry to fit
    (4 bytes per dimension plus an 8-byte header); 0 or less means no inline copy."""
    used = (
        _ENTRY_FIXED
        + 64
        + sum(  # 64: the text hash (32 hex digits) with room to spare
            len(enc(s).encode("utf-8", "surrogatepass"))
            for s in (m.org_id, m.memory_id, m.namespace, m.entity_id or "", model)
        )
    )
    return (BTREE_ENTRY_MAX - used - 8) // 4


def inline_fits_sql(m: str, model_param: str, dims: str) -> str:
    """`inline_dims_max(...) >= dims` in SQL, for row alias `m` (columns hold `enc`-ed strings)."""
    return (
        f"({BTREE_ENTRY_MAX} - {_ENTRY_FIXED} - 64 - 8 - octet_length({m}.org_id) - octet_length({m}.memory_id)"
        f" - octet_length({m}.namespace) - coalesce(octet_length({m}.entity_id), 0)"
        f" - octet_length({model_param})) / 4 >= {dims}"
    )


# Copy `embeddings` rows of the inline model into the memory rows of their text (`{rows}` narrows
# which), where the copy fits (`inline_fits_sql`) and the row has no copy of another model.
_COPY_INLINE = f"""
    UPDATE memories m SET embedding = e.embedding, embedding_model = e.model
    FROM embeddings e
    WHERE e.model = %(model)s AND e.text_hash = m.text_hash
      AND (m.embedding_model IS NULL OR m.embedding_model = e.model)
      AND {inline_fits_sql("m", "e.model", "e.dims")}
      AND {{rows}}
"""


def refresh_inline(conn: psycopg.Connection[Any], model: str, hashes: Sequence[str]) -> None:
    """After vectors of the inline `model` were stored: copy them into the rows of those texts that
    have no copy yet (written before the vector) and replace copies that differ (a replaced vector).
    Touches no row whose copy is already right."""
    conn.execute(
        _COPY_INLINE.format(
            rows="e.text_hash = ANY(%(hashes)s) AND m.embedding IS DISTINCT FROM e.embedding"
        ),
        {"model": enc(model), "hashes": list(hashes)},
        prepare=False,
    )


def _page_rows(missing: str) -> str:
    """Rows of `m` in the page's key range whose column `missing` is NULL, not locked by a writer."""

    def within(a: str) -> str:
        return (
            f"({a}org_id, {a}memory_id) >= (%(fo)s, %(fm)s) AND ({a}org_id, {a}memory_id) <= (%(lo)s, %(lm)s)"
        )

    return (
        f"{within('m.')} AND m.ctid IN (SELECT ctid FROM memories WHERE {within('')}"
        f" AND {missing} IS NULL FOR UPDATE SKIP LOCKED)"
    )


def backfill_inline_page(
    conn: psycopg.Connection[Any], model: str, after: tuple[str, str] | None, limit: int
) -> tuple[int, tuple[str, str] | None]:
    """Give the next `limit` rows in primary-key order after `after` their inline copy of `model`'s
    vector where they have none (and their vector is stored and fits); (vector copies made, last key
    read, None when no rows are left). Rows another transaction holds locked are skipped."""
    where, params = (
        ("", {})
        if after is None
        else ("WHERE (org_id, memory_id) > (%(ao)s, %(am)s)", {"ao": after[0], "am": after[1]})
    )
    keys = conn.execute(
        f"SELECT org_id, memory_id FROM memories {where} ORDER BY org_id, memory_id LIMIT %(n)s",
        {**params, "n": limit},
    ).fetchall()
    if not keys:
        return 0, None
    page = {"fo": keys[0][0], "fm": keys[0][1], "lo": keys[-1][0], "lm": keys[-1][1]}
    made = conn.execute(
        _COPY_INLINE.format(rows=_page_rows("embedding")), {**page, "model": enc(model)}, prepare=False
    ).rowcount
    return made, (keys[-1][0], keys[-1][1])


def inline_params(m: Memory, inline_model: str | None) -> tuple[Any, ...]:
    """The four parameters `_UPSERT` adds to `row_of(m)` (no inline copy without an inline model)."""
    if inline_model is None:
        return (None, None, "", 0)
    return (enc(inline_model), enc(inline_model), text_hash(m.text), inline_dims_max(m, inline_model))


def normalized(m: Memory) -> Memory:
    """The memory with every datetime as aware UTC (what the store keeps and returns)."""
    return msgspec.structs.replace(
        m,
        timestamp=to_utc(m.timestamp),
        valid_from=to_utc(m.valid_from) if m.valid_from is not None else None,
        valid_to=to_utc(m.valid_to) if m.valid_to is not None else None,
        created_at=to_utc(m.created_at),
        updated_at=to_utc(m.updated_at),
    )


def object_entity(m: Memory) -> str | None:
    """The entity a fact points at: an `ent:` string object, or any string when object_type is entity."""
    if isinstance(m.object, str) and m.object and (m.object_type == "entity" or m.object.startswith("ent:")):
        return m.object
    return None


def keyword_columns(kind: str, text: str) -> tuple[list[str], list[str] | None]:
    """(`kw`, `speaker`) of a memory: its keyword terms (`engine.storage.tokenize.terms`) and, for an
    event, the distinct words of its speaker's name (`engine.models.speaker_name`), else None."""
    name = speaker_name(text) if kind == "event" else None
    return enc_all(terms(text)), (enc_all(dict.fromkeys(name.split())) if name else None)


def row_of(m: Memory) -> tuple[Any, ...]:
    m = normalized(m)
    return (
        enc(m.org_id),
        enc(m.memory_id),
        enc(m.namespace),
        enc_opt(m.agent_id),
        enc_opt(m.entity_id),
        enc(m.type),
        enc(m.text),
        text_hash(m.text),
        enc_all(m.tags),
        m.timestamp,
        m.archived,
        enc_opt(m.subject),
        enc_opt(object_entity(m)),
        m.valid_from,
        m.valid_to,
        enc(m.status),
        document(m),
        *keyword_columns(m.type, m.text),
    )


def document(m: Memory) -> str:
    """The `doc` column of a memory (`normalized` first, as `row_of` does)."""
    return _encoder.encode(m).decode("utf-8")


def decode(doc: str) -> Memory:
    """A stored document back as a Memory: straight to Memory when it passes the wire constraints (every
    record written through the API), else field by field from the unconstrained twin."""
    try:
        return _valid_decoder.decode(doc)
    except msgspec.ValidationError:
        stored = _decoder.decode(doc)
        return Memory(**{f: getattr(stored, f) for f in _FIELDS})


_FIELDS = Memory.__struct_fields__


def put(conn: psycopg.Connection[Any], memories: Sequence[Memory], inline_model: str | None = None) -> None:
    if not memories:
        return
    # rows locked in one order (stable: a repeated id's last version still wins)
    memories = sorted(memories, key=lambda m: (m.org_id, m.memory_id))
    with conn.cursor() as cur:
        cur.executemany(_UPSERT, [row_of(m) + inline_params(m, inline_model) for m in memories])
        by_org: dict[str, list[str]] = {}
        for m in memories:
            by_org.setdefault(enc(m.org_id), []).append(enc(m.memory_id))
        for org, ids in by_org.items():
            cur.execute("DELETE FROM memory_keys WHERE org_id = %s AND memory_id = ANY(%s)", (org, ids))
        key_rows = [
            (enc(m.org_id), enc(m.namespace), enc(key), enc(m.memory_id))
            for m in memories
            for key in dict.fromkeys(m.keys or ())
        ]
        if key_rows:
            cur.executemany(
                "INSERT INTO memory_keys (org_id, namespace, key, memory_id) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                key_rows,
            )


def get_many(
    conn: psycopg.Connection[Any], org_id: str, memory_ids: Sequence[str], *, lock: bool = False
) -> list[Memory]:
    """The memories found among `memory_ids`, in the order asked; `lock`: each row locked FOR UPDATE,
    in memory-id order (every writer locks rows in that order)."""
    if not memory_ids:
        return []
    locking = ' ORDER BY memory_id COLLATE "C" FOR UPDATE' if lock else ""
    rows = conn.execute(
        f"SELECT doc FROM memories WHERE org_id = %s AND memory_id = ANY(%s){locking}",
        (enc(org_id), enc_all(memory_ids)),
    ).fetchall()
    found = {m.memory_id: m for m in (decode(doc) for (doc,) in rows)}
    return [found[mid] for mid in memory_ids if mid in found]


def delete(conn: psycopg.Connection[Any], org_id: str, memory_id: str) -> bool:
    cur = conn.execute(
        "DELETE FROM memories WHERE org_id = %s AND memory_id = %s", (enc(org_id), enc(memory_id))
    )
    return cur.rowcount > 0


def list_query(conn: psycopg.Connection[Any], org_id: str, q: ListQuery) -> list[Memory]:
    w = Where().add("org_id = %(org)s", org=enc(org_id))
    if q.namespace is not None:
        w.add("namespace = %(ns)s", ns=enc(q.namespace))
    if q.entity_id is not None:
        w.add("entity_id = %(entity)s", entity=enc(q.entity_id))
    if q.agent_id is not None:
        w.add("agent_id = %(agent)s", agent=enc(q.agent_id))
    if q.types is not None:
        w.add("type = ANY(%(types)s)", types=enc_all(q.types))
    if q.statuses is not None:
        w.add("status = ANY(%(statuses)s)", statuses=enc_all(q.statuses))
    if q.tag is not None:
        w.add("tags @> ARRAY[%(tag)s]::text[]", tag=enc(q.tag))
    if q.archived is not None:
        w.add("archived = %(archived)s", archived=q.archived)
    if q.text is not None:  # ASCII case folding only, as in the other stores
        w.add(
            f"strpos(translate(text, '{string.ascii_uppercase}', '{string.ascii_lowercase}'), %(text)s) > 0",
            text=enc(ascii_lower(q.text)),
        )
    if q.since is not None:
        w.add("ts >= %(since)s", since=to_utc(q.since))
    if q.until is not None:
        w.add("ts < %(until)s", until=to_utc(q.until))
    desc = q.sort == "timestamp_desc"
    if q.after is not None:
        w.add(
            f"(ts, memory_id) {'<' if desc else '>'} (%(after_ts)s, %(after_id)s)",
            after_ts=to_utc(q.after[0]),
            after_id=enc(q.after[1]),
        )
    order = "ts DESC, memory_id DESC" if desc else "ts ASC, memory_id ASC"
    stmt = f"SELECT doc FROM memories WHERE {w.sql} ORDER BY {order} LIMIT %(limit)s"
    params = {**w.params, "limit": max(q.limit, 0)}
    return [decode(doc) for (doc,) in conn.execute(stmt, params).fetchall()]


def find_by_key(conn: psycopg.Connection[Any], org_id: str, namespace: str, key: str) -> list[Memory]:
    rows = conn.execute(
        "SELECT m.doc FROM memory_keys k JOIN memories m USING (org_id, memory_id)"
        " WHERE k.org_id = %s AND k.namespace = %s AND k.key = %s AND m.namespace = k.namespace"
        " AND NOT m.archived ORDER BY m.ts, m.memory_id",
        (enc(org_id), enc(namespace), enc(key)),
    ).fetchall()
    return [decode(doc) for (doc,) in rows]


def count(conn: psycopg.Connection[Any], org_id: str | None) -> int:
    if org_id is None:
        row = conn.execute("SELECT count(*) FROM memories").fetchone()
    else:
        row = conn.execute("SELECT count(*) FROM memories WHERE org_id = %s", (enc(org_id),)).fetchone()
    return int(row[0]) if row else 0


def page_after(
    conn: psycopg.Connection[Any], org_id: str, after: tuple[Any, str] | None, size: int
) -> list[tuple[Any, str, str]]:
    """One keyset page of an org's memories in (ts, memory_id) order: rows of (ts, memory_id, doc).
    `after` is (ts, memory_id) exactly as read from the previous page (already column-encoded)."""
    org_id = enc(org_id)
    if after is None:
        return conn.execute(
            "SELECT ts, memory_id, doc FROM memories WHERE org_id = %s ORDER BY ts, memory_id LIMIT %s",
            (org_id, size),
        ).fetchall()
    return conn.execute(
        "SELECT ts, memory_id, doc FROM memories WHERE org_id = %s AND (ts, memory_id) > (%s, %s)"
        " ORDER BY ts, memory_id LIMIT %s",
        (org_id, after[0], after[1], size),
    ).fetchall()


def iter_docs(pages: Iterator[list[tuple[Any, str, str]]]) -> Iterator[Memory]:
    for page in pages:
        for _, _, doc in page:
            yield decode(doc)
