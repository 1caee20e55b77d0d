"""The PostgreSQL + pgvector store, selected by `LOCI_DATABASE_URL=postgresql://...` (or `postgres://`).

    store = PostgresStore("postgresql://user:pass@host/db")

Modules: `store` (PostgresStore, the record store), `backend` (PostgresSearch, its search backend),
`schema` (migrations under an advisory lock), `rows` (memory rows), `search` (the scope filter, the
graph and conversation queries), `semantic` (the vector plans: exact wherever HNSW would lose
evidence), `keywords` (BM25 as the local index computes it, over the terms each row stores), `bulk`
(COPY loads, HNSW rebuild), `vectors` (pgvector binary codec, per-model HNSW indexes), `bookkeeping`
(API keys, idempotency, events), `pgtext` (NUL-safe, order-preserving string code for columns),
`embedded` (a throwaway server, and a store on a fresh database of it). Test fixtures that start a
real server: `tests/pg_fixture.py`.

Nothing is held in process that another worker would need: any number of server processes can share
one database.

Writes: every embedding insert also updates the per-model HNSW index, which makes row-by-row inserts
slow. For big loads use `PostgresStore.bulk_load(memories, model=..., vectors=...)` (module `bulk`):
binary COPY, and the HNSW index dropped and rebuilt once after the load (docs/benchmarks.md has the
load rates).

Reads at scale: semantic search is exact over the scope's rows when it holds at most
`semantic.EXACT_SCAN_MAX` memories (every entity scope in practice), else over the model's vectors
while it has at most `semantic.EXACT_VECTORS_MAX`, HNSW only beyond both (see `semantic`). Memory rows carry copies of their vector (for the store's `inline_model`; schema
migration 3, `PostgresStore.backfill_inline_vectors` fills rows written before it) and of their keyword
terms (migration 5), INCLUDEd in the entity indexes, so that scan and the entity keyword query read
index pages only.
`loci bench scale` (evals/bench/scale.py) measures load, size and assemble latency.

Transactions. `with store.transaction():` checks a connection out of the psycopg pool and binds it to
a ContextVar; every store call made in that thread/task inside the block uses that connection, and
nested blocks join the outer one. The outermost block commits on normal exit and rolls back on an
exception. A call made outside any block runs in its own transaction on a pooled connection.
Isolation is READ COMMITTED (PostgreSQL's default): each statement sees what was committed before it
started. `with store.snapshot():` binds a REPEATABLE READ READ ONLY transaction the same way, so the
block's reads (an export) all see one snapshot.

Cross-process locking (supersession, patches, deletes and idempotency are correct with many workers).
Every lock is transaction-scoped (held until commit or rollback) and taken only inside
`store.transaction()`; outside one it would end with the call.
- Conflict keys: `find_by_key(org, namespace, key)` first takes
  `pg_advisory_xact_lock(hashtextextended(org || namespace || key))` (joined with a separator), and
  `lock_keys(org, [(namespace, key), ...])` takes the same locks for many keys at once, sorted. The
  SELECT runs after the lock is granted, so under READ COMMITTED it sees everything the previous
  holder committed: `with store.transaction(): old = store.find_by_key(...); ...; put_memories(...)`
  is serialized per conflict key across processes (two workers writing one key end with one active
  fact).
- Rows: `lock_memories(org, ids)` is SELECT ... FOR UPDATE in memory-id order; it waits for the
  rows' writer to finish and returns them as it left them (a deleted one is missing).
  `put_memories` writes its rows in memory-id order too.
- Idempotency: `get_idempotency(org, key, now)` takes an advisory lock on (org, key) first, so
  `with store.transaction(): rec = get_idempotency(...); if rec is None: ...; put_idempotency(...)`
  runs once per key across workers; the second one waits, then sees the stored record and replays.
- Events: inside a transaction `append_events` only collects them; the transaction writes them just
  before it commits, under a per-org advisory lock, so an org's events are numbered (`org_seq`, the
  cursor) in their commit order (a cursor never skips an event that commits late). A `list_events`
  inside the transaction writes the collected ones first, so it reads them.

The order that keeps concurrent writes free of deadlocks, kept by every write path in `engine`:
the Idempotency-Key lock, then every conflict key the write will read (sorted, all at once:
`supersession.lock_keys_of` for a batch or a turn's facts), then rows (`supersession.lock_for_write`
locks a memory's keys, then its row, for a patch, delete or prune), then the event log last (at
commit: a transaction holding it waits for nothing more). A write of an existing row reads it only
after holding its keys and row, so a concurrent supersession, patch or delete is either done (and
seen) or waits: no change is lost and a deleted row is never written back. If the order is broken
anyway (a rare edit moving a memory to other keys between two reads), PostgreSQL detects the deadlock
and aborts one transaction, which the store raises as engine.errors.Conflict (409, "retry the
request"; PostgreSQL's message only in the log).
"""

from engine.storage.postgres.backend import PostgresSearch
from engine.storage.postgres.store import PostgresStore

__all__ = ["PostgresSearch", "PostgresStore"]
