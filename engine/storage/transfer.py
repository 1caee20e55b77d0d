"""Move one org between stores as JSONL: `export_org(store, org, out)` and `import_org(store, lines)`.

Works through the Store protocol only, so any backend exports to and imports from any other
(memory, SQLite, PostgreSQL). The file, one JSON object per line, each with a `kind`:

    {"kind":"header","format":"loci-export","version":1,"org_id":...,"exported_at":...,
     "counts":{"memories":N,"embeddings":N,"events":N,"api_keys":N},"models":[...],...}
    {"kind":"memory","memory":{<every field of engine.models.Memory, msgspec JSON>}}
    {"kind":"embedding","model":"hash:256","text_hash":"...","dim":256,"vector":"<base64 float32 LE>"}
    {"kind":"event","event":{<engine.models.Event>}}
    {"kind":"api_key","api_key":{<engine.models.ApiKey: the hash only, never a secret>}}
    {"kind":"idempotency","record":{<engine.models.IdempotencyRecord: a stored response, bytes as base64>}}

Memories come in (timestamp, memory_id) order, each page followed by the vectors of its texts and of
their passages (`engine.embed.passages`, under the passage model's name; for the models asked; each
text hash once); then events in the order of the org's log; then keys; then the org's unexpired
idempotency records, with their expiry, so a client retrying after the move is answered with the
response it was given, not written twice (files without them, from before, import as they did). An org the store holds no
record of is `NotFound`, naming the orgs it holds, not an empty file. The whole export reads one
`store.snapshot()`: a write committed while it runs (a server serving the org) is wholly in the file
or wholly absent, and no event names a memory the file lacks because it was written meanwhile.
msgspec JSON keeps what the records hold exactly: `object` 5 vs 5.0 vs true, datetimes to the
microsecond (UTC, "Z"), ids. Event `seq` numbers are not kept (the target assigns its own, in the
same order); event ids are.

Import is idempotent, and re-running it never undoes what the target did since:
- a memory is written by id (never duplicated) unless the target holds it with an `updated_at` at
  or after the file's (then the target's is kept: a PATCH, a supersession or an archive made there
  stays; a later export of the source, whose changes are newer, does replace it), or the target's log
  records it deleted (`memory.deleted`, or a `memories.pruned` that deleted it): what the target
  deleted is not brought back. The rows are locked (`lock_memories`) and the log read after, so a
  delete committed meanwhile counts.
- vectors are upserted by (model, text hash); one already stored with the same values is not
  rewritten, which spares index updates.
- an event whose `event_id` the target org already has is skipped.
- an API key already present (same id and hash) is kept, except that a revocation in the file is
  applied.
- an idempotency record is written unless it has expired or the target holds an unexpired one of
  that key (the target's answer stands).
Import restores records, it does not supersede: the file's memories go in with the status they had,
so importing into a store that already holds other memories of the org (written there, not copies
of the file's) can leave two current values of one key (two `active` residences). It is not refused:
a batch cannot know what later batches hold, and the two stay visible to fix (PATCH, DELETE, prune).

A bad file changes nothing. The import reads the file twice: first every line is decoded and
checked, with nothing written: a memory against the API's limits and its rules for a write (an id
that is one path segment, a text, tags and a predicate not blank, conflict keys shaped
`<subject>|<predicate>`), each record's org, each vector's base64 and length, the counts against the
header, no second header, no API key the target holds under another id or org. Then the records are
written. A seekable file is read again from where it stood; a stream (stdin) is spooled to a
temporary file on the first read (in memory up to 64 MiB). Each batch of `batch_size` records is one
`store.transaction()`, so neither pass holds more than a batch in memory or the store's write lock
for longer than a batch; `batch_size=0` makes the whole second pass one transaction. What a batch
then fails on (a key another writer created after the check, a lost connection) leaves the batches
before it committed; running the import again finishes the job.
"""

from __future__ import annotations

import base64
import binascii
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import IO, Any, cast

import msgspec
import numpy as np

from engine.embed.passages import all_passages, passage_model
from engine.errors import Conflict, InvalidInput, NotFound
from engine.memory_service import check_ids, check_labels, check_text
from engine.models import ApiKey, Event, IdempotencyRecord, Memory, text_hash
from engine.storage.base import EventQuery, ListQuery, Store, Vector
from engine.timeutil import utcnow

FORMAT = "loci-export"
FORMAT_VERSION = 1
PAGE = 1000
_PRUNED = "memories.pruned"  # engine.prune's summary event (the ids it deleted are in its data)
_ORGS_SHOWN = 20  # an export of an org the store lacks names this many of those it holds
SPOOL_MAX = 64 << 20  # an export's body, and an import read from a stream, stay in memory up to this


class Counts(msgspec.Struct, kw_only=True):
    memories: int = 0
    embeddings: int = 0
    events: int = 0
    api_keys: int = 0
    idempotency: int = 0  # absent from the files of before: 0


class HeaderLine(msgspec.Struct, kw_only=True, tag="header", tag_field="kind"):
    format: str = FORMAT
    version: int = FORMAT_VERSION
    org_id: str
    exported_at: datetime
    counts: Counts
    models: list[str] = msgspec.field(default_factory=list)
    with_vectors: bool = True
    with_keys: bool = False


class MemoryLine(msgspec.Struct, kw_only=True, tag="memory", tag_field="kind"):
    memory: Memory


class EmbeddingLine(msgspec.Struct, kw_only=True, tag="embedding", tag_field="kind"):
    model: str
    text_hash: str
    dim: int
    vector: str  # base64 of the float32 little-endian bytes


class EventLine(msgspec.Struct, kw_only=True, tag="event", tag_field="kind"):
    event: Event


class ApiKeyLine(msgspec.Struct, kw_only=True, tag="api_key", tag_field="kind"):
    api_key: ApiKey


class IdempotencyLine(msgspec.Struct, kw_only=True, tag="idempotency", tag_field="kind"):
    record: IdempotencyRecord


Line = HeaderLine | MemoryLine | EmbeddingLine | EventLine | ApiKeyLine | IdempotencyLine
Record = MemoryLine | EmbeddingLine | EventLine | ApiKeyLine | IdempotencyLine

_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[Line] = msgspec.json.Decoder(Line)


class ImportResult(msgspec.Struct, kw_only=True):
    """What an import did. `read` counts the file's records; the rest count changes made."""

    org_id: str
    read: Counts
    memories: int = 0  # upserted (new or replaced)
    memories_kept: int = 0  # the target's copy is as new or newer (updated_at): kept as it is
    memories_left_deleted: int = 0  # the target deleted or pruned them: not brought back
    embeddings: int = 0  # upserted (new or changed)
    embeddings_unchanged: int = 0  # already present with the same values
    events: int = 0  # appended
    events_skipped: int = 0  # already present (same event_id)
    api_keys: int = 0  # created
    api_keys_revoked: int = 0  # existing keys the file marks revoked
    api_keys_skipped: int = 0  # already present
    idempotency: int = 0  # written
    idempotency_skipped: int = 0  # expired, or the target holds an unexpired record of the key
    batches: int = 0


# --- vectors ----------------------------------------------------------------------------------------
def _write_vectors(body: IO[bytes], store: Store, model: str, hashes: list[str]) -> int:
    """The stored vectors of `hashes` under `model` as embedding lines, in the order given; how many."""
    found = store.get_embeddings(model, hashes) if hashes else {}
    written = 0
    for h in hashes:  # the order of the memories, not of the dict the store returned
        vec = found.get(h)
        if vec is not None:
            flat = np.asarray(vec, dtype=np.float32).reshape(-1)
            _write(
                body,
                EmbeddingLine(model=model, text_hash=h, dim=int(flat.shape[0]), vector=encode_vector(flat)),
            )
            written += 1
    return written


def encode_vector(vec: Vector) -> str:
    return base64.b64encode(np.asarray(vec, dtype="<f4").reshape(-1).tobytes()).decode("ascii")


def decode_vector(text: str, dim: int) -> Vector:
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise InvalidInput(f"vector is not base64: {exc}", field="vector") from exc
    if len(raw) != 4 * dim:
        raise InvalidInput(f"vector has {len(raw) // 4} values, expected {dim}", field="vector")
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


# --- export -----------------------------------------------------------------------------------------
def iter_org_memories(store: Store, org_id: str, page: int = PAGE) -> Iterator[list[Memory]]:
    """Every memory of an org (any status, archived too) in (timestamp, memory_id) order, by pages."""
    after: tuple[datetime, str] | None = None
    while True:
        rows = store.list_memories(org_id, ListQuery(sort="timestamp_asc", limit=page, after=after))
        if not rows:
            return
        yield rows
        after = (rows[-1].timestamp, rows[-1].memory_id)


def iter_org_events(
    store: Store, org_id: str, page: int = PAGE, after: int | None = None
) -> Iterator[tuple[int, Event]]:
    """The org's log in order as (seq, event), from after `after` when given, by pages."""
    while True:
        rows = store.list_events(org_id, EventQuery(limit=page, after=after))
        if not rows:
            return
        yield from rows
        after = rows[-1][0]


def iter_org_idempotency(
    store: Store, org_id: str, now: datetime, page: int = PAGE
) -> Iterator[IdempotencyRecord]:
    after: str | None = None
    while True:
        rows = store.list_idempotency(org_id, now, after=after, limit=page)
        if not rows:
            return
        yield from rows
        after = rows[-1].key


def _write(out: IO[bytes], record: Line) -> None:
    out.write(_encoder.encode(record))
    out.write(b"\n")


def export_org(
    store: Store,
    org_id: str,
    out: IO[bytes],
    *,
    models: Sequence[str] = (),
    with_vectors: bool = True,
    with_keys: bool = False,
    page: int = PAGE,
    now: datetime | None = None,
) -> HeaderLine:
    """Write the org as JSONL to `out` (header first, with the counts); returns the header.

    `models`: the embedding models whose cached vectors to include (the cache is keyed by model, and
    the Store protocol cannot list them); vectors are skipped when `with_vectors` is False.
    The body is spooled to a temporary file (in memory up to 64 MiB) so the header can lead; it is
    read in one `store.snapshot()`."""
    counts = Counts()
    models = list(dict.fromkeys(models)) if with_vectors else []
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_MAX, mode="w+b") as body, store.snapshot():
        # the hashes written, texts and passages apart: one text may be a memory and a passage
        seen: set[str] = set()
        seen_parts: set[str] = set()
        for rows in iter_org_memories(store, org_id, page):
            for m in rows:
                _write(body, MemoryLine(memory=m))
            counts.memories += len(rows)
            fresh = list(dict.fromkeys(h for h in (text_hash(m.text) for m in rows) if h not in seen))
            parts = [
                h for h in (text_hash(p) for p in all_passages([m.text for m in rows])) if h not in seen_parts
            ]
            seen.update(fresh)
            seen_parts.update(parts)
            for model in models:
                for name, hashes in ((model, fresh), (passage_model(model), parts)):
                    counts.embeddings += _write_vectors(body, store, name, hashes)
        for _, event in iter_org_events(store, org_id, page):
            _write(body, EventLine(event=event))
            counts.events += 1
        if with_keys:
            for key in store.list_api_keys(org_id):
                _write(body, ApiKeyLine(api_key=key))
                counts.api_keys += 1
        now = now or utcnow()
        for record in iter_org_idempotency(store, org_id, now, page):
            _write(body, IdempotencyLine(record=record))
            counts.idempotency += 1
        if counts.memories == counts.events == 0:
            _check_held(store, org_id)
        header = HeaderLine(
            org_id=org_id,
            exported_at=now,
            counts=counts,
            models=models,
            with_vectors=with_vectors,
            with_keys=with_keys,
        )
        _write(out, header)
        body.seek(0)
        shutil.copyfileobj(body, out)
    return header


def _check_held(store: Store, org_id: str) -> None:
    """NotFound naming the orgs the store holds, when it holds no record of `org_id` (a misspelt org
    would export an empty file that imports as nothing)."""
    held = store.org_ids()
    if org_id in held:
        return
    shown = ", ".join(repr(o) for o in held[:_ORGS_SHOWN]) or "none"
    more = f" and {len(held) - _ORGS_SHOWN} more" if len(held) > _ORGS_SHOWN else ""
    raise NotFound(
        f"org {org_id!r} has no records in this store; the orgs it holds: {shown}{more}",
        details={"org_id": org_id, "orgs": held[:_ORGS_SHOWN]},
    )


# --- import -----------------------------------------------------------------------------------------
def _numbered(lines: Iterable[bytes | str]) -> Iterator[tuple[int, Line]]:
    """(line number, record) of a JSONL stream; blank lines are skipped; a bad line is InvalidInput
    naming its number."""
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            yield number, _decoder.decode(raw)
        except msgspec.ValidationError as exc:
            raise InvalidInput(f"line {number}: {exc}", field=f"line {number}") from exc
        except msgspec.DecodeError as exc:
            raise InvalidInput(f"line {number}: not valid JSON: {exc}", field=f"line {number}") from exc


def read_lines(lines: Iterable[bytes | str]) -> Iterator[Line]:
    """Decode a JSONL stream; blank lines are ignored; a bad line is InvalidInput naming its number."""
    for _, line in _numbered(lines):
        yield line


def _rehome(record: Record, org_id: str) -> Record:
    if isinstance(record, MemoryLine) and record.memory.org_id != org_id:
        return MemoryLine(memory=msgspec.structs.replace(record.memory, org_id=org_id))
    if isinstance(record, EventLine) and record.event.org_id != org_id:
        return EventLine(event=msgspec.structs.replace(record.event, org_id=org_id))
    if isinstance(record, ApiKeyLine) and record.api_key.org_id != org_id:
        return ApiKeyLine(api_key=msgspec.structs.replace(record.api_key, org_id=org_id))
    if isinstance(record, IdempotencyLine) and record.record.org_id != org_id:
        return IdempotencyLine(record=msgspec.structs.replace(record.record, org_id=org_id))
    return record


def _org_of(record: Record) -> str | None:
    if isinstance(record, MemoryLine):
        return record.memory.org_id
    if isinstance(record, EventLine):
        return record.event.org_id
    if isinstance(record, ApiKeyLine):
        return record.api_key.org_id
    if isinstance(record, IdempotencyLine):
        return record.record.org_id
    return None  # a vector belongs to no org


def _key_taken(key: ApiKey, found: ApiKey, where: str = "") -> Conflict:
    return Conflict(
        f"{where}{': ' if where else ''}api key {key.key_id!r}: its hash belongs to key {found.key_id!r} "
        f"of org {found.org_id!r}"
    )


class _FileCheck:
    """The first pass: every record of the file decoded and checked against the header and the target,
    nothing written (see the module docstring)."""

    def __init__(self, store: Store, header: HeaderLine, org_id: str) -> None:
        self.store = store
        self.header = header
        self.org_id = org_id
        self.read = Counts()
        self._held_ids: dict[str, ApiKey] | None = None  # the target's keys by id, read at the first key
        self._file_keys: dict[str, str] = {}  # the file's key ids -> their hashes
        self._file_hashes: dict[str, str] = {}  # and back

    def check(self, number: int, line: Line) -> None:
        if isinstance(line, HeaderLine):
            raise InvalidInput(
                f"line {number}: a second header line (two exports concatenated?)", field=f"line {number}"
            )
        org = _org_of(line)
        if org is not None and org != self.header.org_id:
            raise InvalidInput(
                f"line {number}: record of org {org!r} in an export of org {self.header.org_id!r}",
                field=f"line {number}",
            )
        self._count(line)
        if isinstance(line, MemoryLine):
            self._check_memory(number, line.memory)
        elif isinstance(line, EmbeddingLine):
            try:
                decode_vector(line.vector, line.dim)
            except InvalidInput as exc:
                raise InvalidInput(f"line {number}: {exc.message}", field=f"line {number}") from exc
        elif isinstance(line, ApiKeyLine):
            self._check_key(number, msgspec.structs.replace(line.api_key, org_id=self.org_id))

    def _count(self, record: Record) -> None:
        read = self.read
        if isinstance(record, MemoryLine):
            read.memories += 1
        elif isinstance(record, EmbeddingLine):
            read.embeddings += 1
        elif isinstance(record, EventLine):
            read.events += 1
        elif isinstance(record, ApiKeyLine):
            read.api_keys += 1
        else:
            read.idempotency += 1

    def _check_memory(self, number: int, memory: Memory) -> None:
        """What the API refuses to write (a blank text, tag, predicate, entity, agent or namespace, a
        conflict key of another shape) the import refuses too; decoding checked the rest of its limits,
        the id's included."""
        try:
            check_text(memory.text, "memory.text")
            ids = {"namespace": memory.namespace, "entity_id": memory.entity_id, "agent_id": memory.agent_id}
            check_ids("memory.", **ids)
            check_labels(memory.tags, memory.keys, memory.predicate, prefix="memory.")
        except InvalidInput as exc:
            said = (
                exc.message
                if exc.field and exc.message.startswith(exc.field)
                else f"{exc.field}: {exc.message}"
            )
            raise InvalidInput(f"line {number}: {said}", field=f"line {number}") from exc

    def _check_key(self, number: int, key: ApiKey) -> None:
        """A key whose hash the target holds under another id or org, or whose id it holds with another
        hash, would fail its batch: refused here, before anything is written."""
        where = f"line {number}"
        if (
            self._file_keys.setdefault(key.key_id, key.key_hash) != key.key_hash
            or self._file_hashes.setdefault(key.key_hash, key.key_id) != key.key_id
        ):
            raise InvalidInput(f"{where}: api key {key.key_id!r} or its hash appears twice", field=where)
        found = self.store.find_api_key(key.key_hash)
        if found is not None and (found.key_id != key.key_id or found.org_id != key.org_id):
            raise _key_taken(key, found, where)
        if self._held_ids is None:
            self._held_ids = {k.key_id: k for k in self.store.list_api_keys()}
        held = self._held_ids.get(key.key_id)
        if found is None and held is not None:
            raise Conflict(
                f"{where}: api key {key.key_id!r}: the target holds another key of that id, of org {held.org_id!r}"
            )

    def finish(self) -> Counts:
        if self.read != self.header.counts:
            raise InvalidInput(
                f"the file holds {msgspec.to_builtins(self.read)} but its header says "
                f"{msgspec.to_builtins(self.header.counts)} (truncated or edited?)"
            )
        return self.read


class _Importer:
    """The second pass: the checked records written, batch by batch."""

    def __init__(self, store: Store, org_id: str, read: Counts) -> None:
        self.store = store
        self.org_id = org_id
        self.result = ImportResult(org_id=org_id, read=read)
        self._event_ids: set[str] = set()  # the target org's event ids, read up to `_log_seq`
        self._deleted: set[str] = set()  # memory ids its log records deleted or pruned
        self._log_seq: int | None = None  # the last seq read of the target org's log
        self._log_read = False

    def apply(self, batch: list[Record]) -> None:
        memories = [r.memory for r in batch if isinstance(r, MemoryLine)]
        if memories:
            self._import_memories(memories)
        self._import_vectors([r for r in batch if isinstance(r, EmbeddingLine)])
        events = [r.event for r in batch if isinstance(r, EventLine)]
        if events:
            self._import_events(events)
        for r in batch:
            if isinstance(r, ApiKeyLine):
                self._import_key(r.api_key)
            elif isinstance(r, IdempotencyLine):
                self._import_idempotency(r.record)
        self.result.batches += 1

    def _import_vectors(self, lines: list[EmbeddingLine]) -> None:
        store, result = self.store, self.result
        by_model: dict[str, dict[str, Vector]] = {}
        for r in lines:
            by_model.setdefault(r.model, {})[r.text_hash] = decode_vector(r.vector, r.dim)
        for model, vectors in by_model.items():
            # write only what differs: an unchanged vector costs no index update (HNSW on PostgreSQL)
            have = store.get_embeddings(model, list(vectors))
            changed = {
                h: v
                for h, v in vectors.items()
                if h not in have or np.asarray(have[h], dtype=np.float32).tobytes() != v.tobytes()
            }
            if changed:
                store.put_embeddings(model, changed)
            result.embeddings += len(changed)
            result.embeddings_unchanged += len(vectors) - len(changed)

    def _import_events(self, events: list[Event]) -> None:
        known = self._event_ids if self._log_read else self._known_events()  # event ids are unique
        fresh = []
        for e in events:
            if e.event_id in known:
                self.result.events_skipped += 1
            else:
                known.add(e.event_id)
                fresh.append(e)
        if fresh:
            self.store.append_events(fresh)
            self.result.events += len(fresh)

    def _import_memories(self, memories: list[Memory]) -> None:
        """Write the file's memories but those the target holds as new or newer, or deleted."""
        held = {
            m.memory_id: m for m in self.store.lock_memories(self.org_id, [m.memory_id for m in memories])
        }
        self._known_events()  # after the locks: a delete committed meanwhile is in the log now
        fresh: list[Memory] = []
        for m in memories:
            have = held.get(m.memory_id)
            if have is not None and have.updated_at >= m.updated_at:
                self.result.memories_kept += 1
            elif have is None and m.memory_id in self._deleted:
                self.result.memories_left_deleted += 1
            else:
                fresh.append(m)
        if fresh:
            self.store.put_memories(fresh)
            self.result.memories += len(fresh)

    def _known_events(self) -> set[str]:
        """The target org's event ids, with the events appended since the last call read too (and the
        memory ids they record deleted)."""
        for seq, e in iter_org_events(self.store, self.org_id, after=self._log_seq):
            self._event_ids.add(e.event_id)
            if e.type == "memory.deleted" and e.memory_id is not None:
                self._deleted.add(e.memory_id)
            elif e.type == _PRUNED and e.data.get("action") == "delete":  # a prune logged before each
                self._deleted.update(str(i) for i in e.data.get("memory_ids", ()))  # memory had its event
            self._log_seq = seq
        self._log_read = True
        return self._event_ids

    def _import_idempotency(self, record: IdempotencyRecord) -> None:
        now = utcnow()
        if record.expires_at <= now or self.store.get_idempotency(record.org_id, record.key, now) is not None:
            self.result.idempotency_skipped += 1
        else:
            self.store.put_idempotency(record)
            self.result.idempotency += 1

    def _import_key(self, key: ApiKey) -> None:
        found = self.store.find_api_key(key.key_hash)
        if found is None:
            self.store.create_api_key(key)  # Conflict if the key_id is taken by another hash
            self.result.api_keys += 1
        elif found.key_id != key.key_id or found.org_id != key.org_id:
            raise _key_taken(key, found)
        elif key.revoked_at is not None and found.revoked_at is None:
            self.store.revoke_api_key(key.key_id, key.revoked_at)
            self.result.api_keys_revoked += 1
        else:
            self.result.api_keys_skipped += 1


def _header(lines: Iterator[tuple[int, Line]]) -> HeaderLine:
    first = next(lines, None)
    if first is None or not isinstance(first[1], HeaderLine):
        raise InvalidInput("the first line of an import must be the export header")
    header = first[1]
    if header.format != FORMAT or header.version != FORMAT_VERSION:
        raise InvalidInput(
            f"unsupported export format {header.format!r} version {header.version} "
            f"(this code reads {FORMAT!r} version {FORMAT_VERSION})"
        )
    return header


@contextmanager
def _readable_twice(
    lines: Iterable[bytes | str],
) -> Iterator[tuple[Iterable[bytes | str], Callable[[], Iterable[bytes | str]]]]:
    """`lines` for a first read, and a function that gives them again: a seekable file goes back to
    where it stood, anything else (stdin, a pipe, a list) is copied to a spool as the first read goes."""
    seekable = getattr(lines, "seekable", None)
    if callable(seekable) and seekable():
        stream: Any = lines
        start = stream.tell()

        def rewind() -> Iterable[bytes | str]:
            stream.seek(start)
            return cast(Iterable[bytes | str], stream)

        yield lines, rewind
        return
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_MAX, mode="w+b") as spool:

        def copy() -> Iterator[bytes | str]:
            for raw in lines:
                data = raw.encode("utf-8") if isinstance(raw, str) else raw
                spool.write(data if data.endswith(b"\n") else data + b"\n")  # one line each, as numbered
                yield raw

        def replay() -> Iterable[bytes | str]:
            spool.seek(0)
            return cast(Iterable[bytes], spool)

        yield copy(), replay


def import_org(
    store: Store, lines: Iterable[bytes | str], *, org_id: str | None = None, batch_size: int = PAGE
) -> ImportResult:
    """Import an export into `store`, into `org_id` if given (re-homing every record), else into the
    org the header names. The whole file is checked before anything is written; see the module
    docstring for idempotency and atomicity."""
    with _readable_twice(lines) as (first, again):
        records = _numbered(first)
        header = _header(records)
        target = org_id or header.org_id
        check = _FileCheck(store, header, target)
        for number, line in records:
            check.check(number, line)
        importer = _Importer(store, target, check.finish())

        def run() -> None:
            batch: list[Record] = []
            for _, line in _numbered(again()):
                if isinstance(line, HeaderLine):  # the first, as the first pass found
                    continue
                batch.append(_rehome(line, target))
                if batch_size and len(batch) >= batch_size:
                    with store.transaction():
                        importer.apply(batch)
                    batch = []
            if batch:
                with store.transaction():
                    importer.apply(batch)

        if batch_size <= 0:
            with store.transaction():
                run()
        else:
            run()
    return importer.result


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "Counts",
    "HeaderLine",
    "ImportResult",
    "decode_vector",
    "encode_vector",
    "export_org",
    "import_org",
    "iter_org_events",
    "iter_org_idempotency",
    "iter_org_memories",
    "read_lines",
]
