"""The storage seam between the engine and a database, in two faces:

    Store (a RecordStore)   the records: memories, embeddings, API keys, idempotency, the event log,
                            and the transactions that group writes
    store.search            its SearchBackend: the retrieval channels over the same records, with the
                            `Capabilities` it declares (the pipeline reads those, never the backend's type)

Implementations: `in_memory.InMemoryStore` (engine tests) and `sqlite.SQLiteStore` (the embedded
default), which share one local search (`local_index.LocalSearch`), and `postgres.PostgresStore`
with `postgres.PostgresSearch`. All pass the one parametrized suite in `tests/engine/storage/`, every
test on every backend.

Rules every implementation keeps:
- Org isolation: every call takes `org_id` (directly or in a `Scope`) and never returns or touches
  another org's rows.
- Atomicity: `with store.transaction():` groups calls into one all-or-nothing unit (nested blocks join
  the outer one). A call made outside a transaction block is its own transaction. When the outermost
  block exits normally the change is durable (committed) before control returns. Searches made inside
  the block see its writes; searches made elsewhere never see them before the commit.
- Snapshots: `with store.snapshot():` makes the record reads of the block (this thread or task) see
  the store as it stood when the block began, so a transaction committed meanwhile is wholly absent
  from them, never half seen; writers are not held up. An export reads in one (`transfer`).
- Isolation of writes: a transaction that reads memories and writes them back never overwrites or
  brings back what a concurrent one changed or deleted. A store either runs one write transaction at
  a time (SQLite, in memory: `lock_keys` and `lock_memories` do nothing more), or locks what is read,
  always in one order so two writes never deadlock (PostgreSQL: conflict keys, sorted, with
  `find_by_key`/`lock_keys`; then rows with `lock_memories`; the org's event log last, at commit).
- Records round-trip exactly: what `put_memories` stores, `get_memory` returns, field for field
  (datetimes as aware UTC; `object` keeps str/int/float/bool/dict/None apart).
- Searches filter inside the search by the whole `Scope` (org, namespace, entity, agent, the caller's
  memory ids, archived, status/validity at `as_of`): they never fetch a fixed number of rows first and filter afterwards,
  so no eligible memory is missed; and every backend ranks alike (the same BM25 numbers, exact
  vectors up to `Capabilities.exact_vectors_max` candidates).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Literal, Protocol, runtime_checkable

import msgspec
import numpy as np
import numpy.typing as npt

from engine.models import ApiKey, Event, IdempotencyRecord, Memory

Vector = npt.NDArray[np.float32]
SortOrder = Literal["timestamp_desc", "timestamp_asc"]


class ListQuery(msgspec.Struct, frozen=True, kw_only=True):
    """Filters, order and keyset position of `Store.list_memories`.

    Ordering is by (timestamp, memory_id), both immutable, so keyset paging with `after` never repeats
    or skips a memory that existed when paging began, whatever is written meanwhile.
    """

    namespace: str | None = None
    entity_id: str | None = None
    agent_id: str | None = None
    types: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = None
    tag: str | None = None
    archived: bool | None = None
    since: datetime | None = None  # timestamp >= since
    until: datetime | None = None  # timestamp < until
    text: str | None = None  # the text contains it (ASCII letters case-insensitive; no control chars)
    sort: SortOrder = "timestamp_desc"
    limit: int = 50
    after: tuple[datetime, str] | None = None  # (timestamp, memory_id) of the last item already seen


class Scope(msgspec.Struct, frozen=True, kw_only=True):
    """Which memories are retrieval candidates.

    - org_id and namespace always; entity_id and agent_id when not None.
    - `memory_ids` when not None: only those memories (a selection the caller made by rules the scope
      cannot state, e.g. mem0's filters), so a search ranks within it.
    - archived memories never.
    - `as_of` None (as of now): valid_from, when set, <= now (a value stated to begin later is not
      current yet), and status 'active' with (valid_to is null or valid_to > now), the latter skipped
      when `expired` (mem0's `show_expired`: memories past their expiration date too), or status
      'disputed' (tied with another value of its key: both show) with (valid_to is null or valid_to >
      now), or status 'superseded' with valid_to > now (a value dated in the future supersedes it from
      then on).
    - `as_of` set: status is ignored; (valid_from or timestamp) <= as_of and
      (valid_to is null or valid_to > as_of). So a fact superseded later is what was true then.
    `now` is the reference time used when as_of is None (injected so tests are exact).
    """

    org_id: str
    namespace: str = "default"
    entity_id: str | None = None
    agent_id: str | None = None
    as_of: datetime | None = None
    now: datetime
    expired: bool = False
    memory_ids: frozenset[str] | None = None


class Hit(msgspec.Struct, frozen=True, array_like=True):
    """A retrieval candidate from one channel with its raw (unnormalized) score."""

    memory_id: str
    raw: float


class Adjacent(msgspec.Struct, frozen=True, array_like=True):
    """An event next to another (`anchor_id`) in time order: `offset` -span..-1 before it, 1..span after."""

    anchor_id: str
    memory_id: str
    offset: int


class EventQuery(msgspec.Struct, frozen=True, kw_only=True):
    type: str | None = None
    entity_id: str | None = None
    memory_id: str | None = None
    since: datetime | None = None
    limit: int = 100
    after: int | None = None  # the org's `seq` of the last event already seen


class RecordStore(Protocol):
    """The records and their transactions (see the module docstring)."""

    # --- lifecycle and transactions -------------------------------------------------------------
    def transaction(self) -> AbstractContextManager[None]: ...

    def snapshot(self) -> AbstractContextManager[None]:
        """A read-only view for the block: the record reads made in it by this thread (or task) see one
        state of the store, the one committed when the block began; writes committed by others meanwhile
        are not seen, and are not held up. A write inside the block raises (or, PostgreSQL, fails in the
        database). Inside `transaction()` it joins the transaction (which sees its own writes). Searches
        (`store.search`) are not part of it."""
        ...

    def ping(self, timeout: float) -> None:
        """One round trip to the database within about `timeout` seconds, else Unavailable (a server's
        readiness: GET /v0/health)."""
        ...

    def close(self) -> None: ...

    # --- memories --------------------------------------------------------------------------------
    def put_memories(self, memories: Sequence[Memory]) -> None:
        """Insert new memories or replace existing ones (matched by org_id + memory_id)."""
        ...

    def get_memory(self, org_id: str, memory_id: str) -> Memory | None: ...

    def get_memories(self, org_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        """The memories that exist among `memory_ids`, in the order asked; missing ids are skipped."""
        ...

    def delete_memory(self, org_id: str, memory_id: str) -> bool: ...

    def list_memories(self, org_id: str, query: ListQuery) -> list[Memory]: ...

    def find_by_key(self, org_id: str, namespace: str, key: str) -> list[Memory]:
        """Every memory (any status, not archived) whose `keys` holds `key`; for supersession."""
        ...

    def lock_keys(self, org_id: str, keys: Sequence[tuple[str, str]]) -> None:
        """Inside a transaction, take the lock `find_by_key` takes on each (namespace, key), in sorted
        order, until the transaction ends: a write that will read several keys takes them all first, so
        two such writes wait for each other instead of deadlocking. A no-op outside a transaction and
        in a store that runs one write transaction at a time (SQLite, in memory)."""
        ...

    def lock_memories(self, org_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        """`get_memories`, with each row found locked until the transaction ends (in memory-id order),
        read after the lock is granted: what a read-modify-write of those rows starts from. A row
        deleted meanwhile is missing. Outside a transaction, and in a store that runs one write
        transaction at a time, it is `get_memories`."""
        ...

    def count_memories(self, org_id: str | None = None) -> int: ...

    def org_ids(self) -> list[str]:
        """The orgs the store holds any record of (memory, event, API key, idempotency record), sorted."""
        ...

    def iter_memories(self, org_id: str) -> Iterator[Memory]:
        """Every memory of an org (export, index rebuilds)."""
        ...

    # --- embeddings: a cache keyed by (model, text hash) -----------------------------------------
    def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, Vector]: ...

    def put_embeddings(self, model: str, vectors: Mapping[str, Vector]) -> None: ...

    def embedding_models(self) -> list[str]:
        """The models the stored vectors belong to (an export's default)."""
        ...

    def missing_vectors(self, model: str) -> Iterator[str]:
        """The text of every stored memory (any org) that has no vector for `model`, read in pages
        (`loci doctor` embeds them; `/metrics` counts them)."""
        ...

    def long_texts(self, min_chars: int) -> Iterator[str]:
        """The text of every stored memory (any org) longer than `min_chars` characters, read in pages
        (`loci doctor` gives their passages vectors, `engine.embed.passages`)."""
        ...

    # --- API keys --------------------------------------------------------------------------------
    def create_api_key(self, key: ApiKey) -> None: ...

    def find_api_key(self, key_hash: str) -> ApiKey | None: ...

    def list_api_keys(self, org_id: str | None = None) -> list[ApiKey]: ...

    def revoke_api_key(self, key_id: str, at: datetime) -> bool: ...

    # --- idempotency -----------------------------------------------------------------------------
    def get_idempotency(self, org_id: str, key: str, now: datetime) -> IdempotencyRecord | None:
        """The unexpired record for (org, key), if any."""
        ...

    def put_idempotency(self, record: IdempotencyRecord) -> None: ...

    def list_idempotency(
        self, org_id: str, now: datetime, *, after: str | None = None, limit: int = 1000
    ) -> list[IdempotencyRecord]:
        """The org's unexpired records in key order, after the key `after` (an export moves them)."""
        ...

    # --- event log -------------------------------------------------------------------------------
    def append_events(self, events: Sequence[Event], *, durable: bool = True) -> None:
        """Append to the org's log. `durable=False`, for a log entry no acknowledged write depends on (a
        read's `context.assembled`): outside a transaction the commit need not wait for the disk; it
        survives the process being killed, and the next durable commit takes it to disk, but an OS crash
        or power loss before that may lose it. Inside a transaction the transaction decides."""
        ...

    def list_events(self, org_id: str, query: EventQuery) -> list[tuple[int, Event]]:
        """The org's events in append order as (seq, event). `seq` numbers the org's own events (1, 2, ...:
        nothing in it depends on other orgs), increases strictly in commit order and is the cursor."""
        ...


class Capabilities(msgspec.Struct, frozen=True, kw_only=True):
    """What a search backend declares about itself; the pipeline and the server read these."""

    #: searches run in a database server, not on this process's cores: the pipeline embeds the query
    #: in another thread while they run (in process the two would compete for the same cores)
    server_side: bool
    #: memory rows can carry a copy of one embedding model's vectors, so an entity's semantic search
    #: reads an index alone (`SearchBackend.keep_vector_copies`, `fill_vector_copies`)
    vector_copies: bool
    #: semantic search is exact for scopes of at most this many candidates, approximate (HNSW) above;
    #: None: always exact
    exact_vectors_max: int | None


class SearchBackend(Protocol):
    """The retrieval channels over a RecordStore's memories (filtering inside, see Scope)."""

    @property
    def capabilities(self) -> Capabilities: ...

    def vector_search(self, scope: Scope, model: str, query: Vector, k: int) -> list[Hit]:
        """Cosine similarity (vectors are L2-normalized) of memories whose text has a cached vector
        for `model`; best first; raw = similarity."""
        ...

    def keyword_search(self, scope: Scope, text: str, k: int, speakers: Sequence[str] = ()) -> list[Hit]:
        """BM25 over memory texts within the scope; best first; raw = BM25 score (> 0 only).
        `speakers`: the words the caller asks `speaker_shares` of next in this scope, which a database
        store counts in the same statement."""
        ...

    def graph_search(self, scope: Scope, seeds: Sequence[str], depth: int, k: int) -> list[Hit]:
        """Memories linked to the seed entities through the entity graph that facts' subject/object
        (object_type 'entity' or an `ent:` object) and memories' entity_id form. raw = hop distance
        (0 = about a seed itself, up to `depth`); nearest first."""
        ...

    def adjacent_events(
        self, scope: Scope, memory_ids: Sequence[str], span: int, max_gap: timedelta
    ) -> list[Adjacent]:
        """The conversation around events: for each of `memory_ids` that is an in-scope event, the
        in-scope events up to `span` places before and after it in (timestamp, memory_id) order,
        walking outward only while consecutive events are at most `max_gap` apart (the same stretch of
        conversation). Per anchor nearest first, before then after; other ids get none."""
        ...

    def scope_size(self, scope: Scope) -> int:
        """How many memories are candidates under `scope`."""
        ...

    def speaker_shares(self, scope: Scope, words: Sequence[str]) -> list[float]:
        """Per word, the share of the in-scope events spoken by a name that holds it: an event whose
        text starts with "<Name>: " (`engine.models.speaker_name`) with the word one of Name's words.
        0.0 when the scope has no events."""
        ...

    def keep_vector_copies(self, model: str) -> None:
        """Copy `model`'s vectors into the rows written from now on, unless a model is kept already
        (only with `capabilities.vector_copies`; a no-op otherwise)."""
        ...

    def fill_vector_copies(self) -> int:
        """Copy the kept model's vectors into rows written without one; the copies made (0 without
        `capabilities.vector_copies`)."""
        ...


@runtime_checkable
class Store(RecordStore, Protocol):
    """A RecordStore with the SearchBackend over its records."""

    @property
    def search(self) -> SearchBackend: ...


def page_through(store: Store, org_id: str, query: ListQuery) -> Iterator[Memory]:
    """Every memory matching `query`, read page by page (`query.limit` at a time) with keyset paging
    on (timestamp, memory_id), so nothing is loaded all at once and nothing is repeated or skipped."""
    while True:
        page = store.list_memories(org_id, query)
        yield from page
        if len(page) < query.limit:
            return
        last = page[-1]
        query = msgspec.structs.replace(query, after=(last.timestamp, last.memory_id))
