"""SQLite schema, versioned with PRAGMA user_version and migrated forward on open.

`MIGRATIONS[i]` takes a database at version i to version i + 1. Never edit a released migration:
append a new one. Times are INTEGER microseconds since the epoch (UTC); JSON columns hold msgspec JSON.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import msgspec

from engine.errors import Unavailable

Migration = Callable[[sqlite3.Connection], None]


def _run(conn: sqlite3.Connection, script: str) -> None:
    """Execute `;`-separated statements inside the current transaction (executescript would commit)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _v1(conn: sqlite3.Connection) -> None:
    _run(
        conn,
        """
        CREATE TABLE memories (
            org_id       TEXT NOT NULL,
            memory_id    TEXT NOT NULL,
            namespace    TEXT NOT NULL,
            agent_id     TEXT,
            entity_id    TEXT,
            type         TEXT NOT NULL,
            text         TEXT NOT NULL,
            metadata     TEXT NOT NULL,
            tags         TEXT NOT NULL,
            ts           INTEGER NOT NULL,
            archived     INTEGER NOT NULL,
            sensitivity  TEXT NOT NULL,
            subject      TEXT,
            predicate    TEXT,
            object       TEXT NOT NULL,
            object_type  TEXT,
            unit         TEXT,
            keys         TEXT,
            valid_from   INTEGER,
            valid_to     INTEGER,
            confidence   REAL,
            status       TEXT NOT NULL,
            provenance   TEXT NOT NULL,
            created_at   INTEGER NOT NULL,
            updated_at   INTEGER NOT NULL,
            PRIMARY KEY (org_id, memory_id)
        ) WITHOUT ROWID;
        CREATE INDEX memories_org_ts ON memories (org_id, ts, memory_id);
        CREATE INDEX memories_org_ns_ts ON memories (org_id, namespace, ts, memory_id);
        CREATE INDEX memories_org_entity_ts ON memories (org_id, entity_id, ts, memory_id);
        CREATE INDEX memories_org_agent_ts ON memories (org_id, agent_id, ts, memory_id);

        CREATE TABLE memory_keys (
            org_id     TEXT NOT NULL,
            namespace  TEXT NOT NULL,
            key        TEXT NOT NULL,
            memory_id  TEXT NOT NULL,
            PRIMARY KEY (org_id, namespace, key, memory_id),
            FOREIGN KEY (org_id, memory_id) REFERENCES memories (org_id, memory_id) ON DELETE CASCADE
        ) WITHOUT ROWID;
        CREATE INDEX memory_keys_memory ON memory_keys (org_id, memory_id);

        CREATE TABLE embeddings (
            model      TEXT NOT NULL,
            text_hash  TEXT NOT NULL,
            dim        INTEGER NOT NULL,
            vector     BLOB NOT NULL,
            PRIMARY KEY (model, text_hash)
        ) WITHOUT ROWID;

        CREATE TABLE api_keys (
            key_id      TEXT PRIMARY KEY,
            org_id      TEXT NOT NULL,
            key_hash    TEXT NOT NULL UNIQUE,
            scopes      TEXT NOT NULL,
            name        TEXT,
            created_at  INTEGER NOT NULL,
            revoked_at  INTEGER
        );
        CREATE INDEX api_keys_org ON api_keys (org_id, created_at, key_id);

        CREATE TABLE idempotency (
            org_id        TEXT NOT NULL,
            key           TEXT NOT NULL,
            fingerprint   TEXT NOT NULL,
            status_code   INTEGER NOT NULL,
            body          BLOB NOT NULL,
            content_type  TEXT NOT NULL,
            created_at    INTEGER NOT NULL,
            expires_at    INTEGER NOT NULL,
            PRIMARY KEY (org_id, key)
        ) WITHOUT ROWID;

        CREATE TABLE events (
            seq        INTEGER PRIMARY KEY AUTOINCREMENT,
            event_id   TEXT NOT NULL,
            org_id     TEXT NOT NULL,
            type       TEXT NOT NULL,
            at         INTEGER NOT NULL,
            memory_id  TEXT,
            entity_id  TEXT,
            data       TEXT NOT NULL
        );
        CREATE INDEX events_org_seq ON events (org_id, seq);
        """,
    )


def _v2(conn: sqlite3.Connection) -> None:
    """Tags side table (indexed tag filter), backfilled from memories.tags; events by type."""
    _run(
        conn,
        """
        CREATE TABLE memory_tags (
            org_id     TEXT NOT NULL,
            tag        TEXT NOT NULL,
            memory_id  TEXT NOT NULL,
            PRIMARY KEY (org_id, tag, memory_id),
            FOREIGN KEY (org_id, memory_id) REFERENCES memories (org_id, memory_id) ON DELETE CASCADE
        ) WITHOUT ROWID;
        CREATE INDEX memory_tags_memory ON memory_tags (org_id, memory_id);
        CREATE INDEX events_org_type_seq ON events (org_id, type, seq);
        CREATE INDEX idempotency_expires ON idempotency (expires_at);
        """,
    )
    rows = conn.execute("SELECT org_id, memory_id, tags FROM memories").fetchall()
    pairs = {(org, tag, mid) for org, mid, tags in rows for tag in msgspec.json.decode(tags, type=list[str])}
    conn.executemany("INSERT INTO memory_tags (org_id, tag, memory_id) VALUES (?, ?, ?)", sorted(pairs))


def _v3(conn: sqlite3.Connection) -> None:
    """Embeddings in a rowid table keyed by a unique index: a batch of new texts appends its vectors
    instead of splitting pages all over a B-tree of kilobyte rows, and looking a hash up reads the
    small index only."""
    _run(
        conn,
        """
        CREATE TABLE embeddings_v3 (
            id         INTEGER PRIMARY KEY,
            model      TEXT NOT NULL,
            text_hash  TEXT NOT NULL,
            dim        INTEGER NOT NULL,
            vector     BLOB NOT NULL
        );
        INSERT INTO embeddings_v3 (model, text_hash, dim, vector)
            SELECT model, text_hash, dim, vector FROM embeddings ORDER BY model, text_hash;
        DROP TABLE embeddings;
        ALTER TABLE embeddings_v3 RENAME TO embeddings;
        CREATE UNIQUE INDEX embeddings_key ON embeddings (model, text_hash);
        """,
    )


def _v4(conn: sqlite3.Connection) -> None:
    """Events numbered per org (`org_seq`, the cursor's position: it tells an org nothing about the others'
    writes), backfilled in log order; the global `seq` stays as the row id."""
    _run(
        conn,
        """
        ALTER TABLE events ADD COLUMN org_seq INTEGER;
        CREATE TEMP TABLE event_numbers (seq INTEGER PRIMARY KEY, org_seq INTEGER NOT NULL);
        INSERT INTO event_numbers (seq, org_seq)
            SELECT seq, row_number() OVER (PARTITION BY org_id ORDER BY seq) FROM events;
        UPDATE events SET org_seq = (SELECT n.org_seq FROM event_numbers n WHERE n.seq = events.seq);
        DROP TABLE temp.event_numbers;
        CREATE UNIQUE INDEX events_org_oseq ON events (org_id, org_seq);
        CREATE INDEX events_org_type_oseq ON events (org_id, type, org_seq);
        DROP INDEX events_org_seq;
        DROP INDEX events_org_type_seq;
        """,
    )


def _v5(conn: sqlite3.Connection) -> None:
    """The subjects of entities beyond ASCII as slugs now spell them (`engine.write.turns.resubjected`:
    "борис" held `ent:x`, which every such entity shared), with the keys of those subjects."""
    from engine.storage.sqlite.codec import MEMORY_SELECT, row_memory
    from engine.write.turns import resubjected

    rows = conn.execute(
        f"SELECT {MEMORY_SELECT} FROM memories WHERE subject IS NOT NULL"
        " AND length(CAST(entity_id AS BLOB)) <> length(entity_id)"
    ).fetchall()
    for row in rows:
        m = resubjected(row_memory(row))
        if m is None:
            continue
        keys = None if m.keys is None else msgspec.json.encode(m.keys).decode("utf-8")
        conn.execute(
            "UPDATE memories SET subject = ?, keys = ? WHERE org_id = ? AND memory_id = ?",
            (m.subject, keys, m.org_id, m.memory_id),
        )
        conn.execute("DELETE FROM memory_keys WHERE org_id = ? AND memory_id = ?", (m.org_id, m.memory_id))
        conn.executemany(
            "INSERT OR IGNORE INTO memory_keys (org_id, namespace, key, memory_id) VALUES (?, ?, ?, ?)",
            [(m.org_id, m.namespace, k, m.memory_id) for k in m.keys or ()],
        )


MIGRATIONS: list[Migration] = [_v1, _v2, _v3, _v4, _v5]
LATEST = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, target: int = LATEST) -> int:
    """Run the pending migrations up to `target`, each in its own transaction; returns the new version.
    `conn` must be in autocommit mode (isolation_level=None)."""
    version = schema_version(conn)
    if version > LATEST:
        raise Unavailable(
            f"the database's schema version {version} is newer than this Loci's ({LATEST}): it was written "
            "by a newer Loci; run that one (or a newer one) on it"
        )
    while version < target:
        conn.execute("BEGIN IMMEDIATE")
        try:
            MIGRATIONS[version](conn)
            version += 1
            conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return version
