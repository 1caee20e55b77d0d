"""The PostgreSQL schema as numbered migrations, applied on start under an advisory lock.

`migrate(url)` takes a session-level `pg_advisory_lock(MIGRATION_LOCK)` on its own connection, applies
every migration not yet recorded in `schema_migrations` (each in its own transaction), then unlocks.
Several workers starting at once therefore run the migrations exactly once: the others wait on the
lock and then find nothing left to do.

Each `memories` row keeps the whole record as msgspec JSON text in `doc` (the record of truth: it
keeps int vs float in `object`, which `jsonb` would not for 5.0, and every datetime to the
microsecond); the other columns are copies used only by queries and indexes (strings through
`pgtext.enc`, which makes NUL storable). Ids are COLLATE "C": code-point order, as in Python, for
the (timestamp, memory_id) keyset order whatever the database's default collation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from engine.errors import Unavailable

#: `tsv_small` (migration 3), and since migration 5 `kw_small` with `speaker_small`, are kept when
#: their size plus the row's ids stays within this many bytes, so the memories_by_entity_kw entry
#: (those, ~250 bytes of other columns and overhead) stays under btree's 2,704-byte limit for any ids
#: the API accepts.
INLINE_BUDGET = 2200


def _ids_size(row: str) -> str:
    return (
        f"octet_length({row}.org_id) + octet_length({row}.memory_id)"
        f" + octet_length({row}.namespace) + coalesce(octet_length({row}.entity_id), 0)"
    )


def tsv_inline_fits(row: str, tsv: str) -> str:
    """Migration 3's rule for keeping `tsv_small`, in SQL: tsvector `tsv` of row `row` (an alias, or
    NEW) fits beside the row's ids."""
    return f"pg_column_size({tsv}) + {_ids_size(row)} <= {INLINE_BUDGET}"


def kw_inline_fits(row: str) -> str:
    """The rule for keeping `kw_small` and `speaker_small` (the trigger of migration 5), in SQL: the
    keyword terms and speaker words of row `row` (an alias, or NEW) fit beside its ids."""
    return (
        f"pg_column_size({row}.kw) + coalesce(pg_column_size({row}.speaker), 0) + {_ids_size(row)}"
        f" <= {INLINE_BUDGET}"
    )


# Any 64-bit constant unique to Loci's migrations ("loci" in ASCII, then 1).
MIGRATION_LOCK = 0x6C6F6369_00000001
#: rows tokenized per round trip by `tokenize_rows`
TOKENIZE_BATCH = 20_000

Step = str | Callable[[psycopg.Connection[Any]], None]


def tokenize_rows(conn: psycopg.Connection[Any], *, non_ascii_only: bool = False) -> None:
    """Migration 5's data step: every existing row's `kw` and `speaker` (rows.keyword_columns), read
    in primary-key order and written back through a temporary table, a batch at a time.
    `non_ascii_only`: only the rows whose text has a character beyond ASCII (migrations 6, 7 and 9)."""
    from engine.storage.postgres.pgtext import dec
    from engine.storage.postgres.rows import keyword_columns

    conn.execute(
        'CREATE TEMPORARY TABLE loci_kw (org_id text COLLATE "C", memory_id text COLLATE "C",'
        " kw text[], speaker text[]) ON COMMIT DROP"
    )
    after: tuple[str, str] = ("", "")
    while True:
        rows = conn.execute(
            "SELECT org_id, memory_id, type, text FROM memories WHERE (org_id, memory_id) > (%s, %s)"
            + (" AND octet_length(text) <> char_length(text)" if non_ascii_only else "")
            + " ORDER BY org_id, memory_id LIMIT %s",
            (*after, TOKENIZE_BATCH),
        ).fetchall()
        if not rows:
            return
        with conn.cursor() as cur, cur.copy("COPY loci_kw FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["text", "text", "text[]", "text[]"])
            for org, memory_id, kind, text in rows:
                copy.write_row((org, memory_id, *keyword_columns(dec(kind), dec(text))))
        conn.execute(
            "UPDATE memories m SET kw = t.kw, speaker = t.speaker FROM loci_kw t"
            " WHERE m.org_id = t.org_id AND m.memory_id = t.memory_id"
        )
        conn.execute("TRUNCATE loci_kw")
        after = (rows[-1][0], rows[-1][1])


def resubject_rows(conn: psycopg.Connection[Any]) -> None:
    """Migration 8's data step: the subjects of entities beyond ASCII as slugs now spell them
    (`engine.write.turns.resubjected`: "борис" held `ent:x`, which every such entity shared), with the
    keys of those subjects, a batch of candidate rows at a time; the row's other columns, its inline
    vector among them, stay as they are."""
    from engine.storage.postgres.pgtext import enc, enc_opt
    from engine.storage.postgres.rows import decode, document
    from engine.write.turns import resubjected

    after: tuple[str, str] = ("", "")
    while rows := conn.execute(
        "SELECT org_id, memory_id, doc FROM memories WHERE (org_id, memory_id) > (%s, %s)"
        " AND subject IS NOT NULL AND octet_length(entity_id) <> char_length(entity_id)"
        " ORDER BY org_id, memory_id LIMIT %s",
        (*after, TOKENIZE_BATCH),
    ).fetchall():
        after = (rows[-1][0], rows[-1][1])
        for m in filter(None, (resubjected(decode(doc)) for _, _, doc in rows)):
            org, memory_id = enc(m.org_id), enc(m.memory_id)
            conn.execute(
                "UPDATE memories SET subject = %s, doc = %s WHERE org_id = %s AND memory_id = %s",
                (enc_opt(m.subject), document(m), org, memory_id),
            )
            conn.execute("DELETE FROM memory_keys WHERE org_id = %s AND memory_id = %s", (org, memory_id))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO memory_keys (org_id, namespace, key, memory_id) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT DO NOTHING",
                    [(org, enc(m.namespace), enc(k), memory_id) for k in dict.fromkeys(m.keys or ())],
                )


@dataclass(frozen=True)
class Retokenize:
    """A data step that writes `kw` and `speaker` again (`tokenize_rows`), with the code of the server
    migrating: two such steps in one `migrate` call give the same rows, so a step whose rows an earlier
    one of the call rewrote is skipped (`covers`)."""

    non_ascii_only: bool = False

    def __call__(self, conn: psycopg.Connection[Any]) -> None:
        tokenize_rows(conn, non_ascii_only=self.non_ascii_only)

    def covers(self, other: Retokenize) -> bool:
        return not self.non_ascii_only or other.non_ascii_only


MIGRATIONS: tuple[tuple[int, Step], ...] = (
    (
        1,
        """
        CREATE TABLE memories (
            org_id        text COLLATE "C" NOT NULL,
            memory_id     text COLLATE "C" NOT NULL,
            namespace     text        NOT NULL,
            agent_id      text,
            entity_id     text,
            type          text        NOT NULL,
            text          text        NOT NULL,
            text_hash     text        NOT NULL,
            tags          text[]      NOT NULL DEFAULT '{}',
            ts            timestamptz NOT NULL,
            archived      boolean     NOT NULL DEFAULT false,
            subject       text,
            object_entity text,
            valid_from    timestamptz,
            valid_to      timestamptz,
            status        text        NOT NULL,
            doc           text        NOT NULL,
            tsv           tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
            PRIMARY KEY (org_id, memory_id)
        );
        CREATE INDEX memories_by_time ON memories (org_id, ts, memory_id);
        CREATE INDEX memories_by_scope ON memories (org_id, namespace, status, ts);
        CREATE INDEX memories_by_entity ON memories (org_id, namespace, entity_id);
        CREATE INDEX memories_by_subject ON memories (org_id, namespace, subject)
            WHERE subject IS NOT NULL;
        CREATE INDEX memories_by_object_entity ON memories (org_id, namespace, object_entity)
            WHERE object_entity IS NOT NULL;
        CREATE INDEX memories_by_text_hash ON memories (text_hash);
        CREATE INDEX memories_tsv ON memories USING gin (tsv);
        CREATE INDEX memories_tags ON memories USING gin (tags);

        CREATE TABLE memory_keys (
            org_id    text COLLATE "C" NOT NULL,
            namespace text NOT NULL,
            key       text NOT NULL,
            memory_id text COLLATE "C" NOT NULL,
            PRIMARY KEY (org_id, namespace, key, memory_id),
            FOREIGN KEY (org_id, memory_id) REFERENCES memories (org_id, memory_id) ON DELETE CASCADE
        );
        CREATE INDEX memory_keys_by_memory ON memory_keys (org_id, memory_id);

        -- Vector cache keyed like the protocol. The column has no fixed dimension (models differ);
        -- each (model, dims) gets a partial HNSW expression index, see vectors.ensure_hnsw_index.
        CREATE TABLE embeddings (
            model     text   NOT NULL,
            text_hash text   NOT NULL,
            dims      int    NOT NULL,
            embedding vector NOT NULL,
            PRIMARY KEY (model, text_hash)
        );

        CREATE TABLE api_keys (
            key_id     text COLLATE "C" PRIMARY KEY,
            org_id     text        NOT NULL,
            key_hash   text        NOT NULL UNIQUE,
            created_at timestamptz NOT NULL,
            doc        text        NOT NULL
        );
        CREATE INDEX api_keys_by_org ON api_keys (org_id, created_at, key_id);

        CREATE TABLE idempotency (
            org_id     text        NOT NULL,
            key        text        NOT NULL,
            expires_at timestamptz NOT NULL,
            doc        text        NOT NULL,
            PRIMARY KEY (org_id, key)
        );
        CREATE INDEX idempotency_by_expiry ON idempotency (expires_at);

        CREATE TABLE events (
            seq       bigserial   PRIMARY KEY,
            org_id    text        NOT NULL,
            type      text        NOT NULL,
            entity_id text,
            at        timestamptz NOT NULL,
            doc       text        NOT NULL
        );
        CREATE INDEX events_by_org ON events (org_id, seq);
        CREATE INDEX events_by_org_type ON events (org_id, type, seq);
        """,
    ),
    (
        2,
        # The entity scope every assemble reads: equality on (org, namespace, entity), newest first for
        # the recent events, and INCLUDE the columns the candidate filter and the exact semantic scan
        # read, so that scan reads index pages only instead of one heap page per candidate.
        # agent_id stays out (an agent-scoped read fetches the heap rows): ids of up to 256 characters
        # must keep a worst-case entry under btree's 2,704-byte limit. Building it takes a write lock
        # on `memories` while it builds.
        """
        CREATE INDEX memories_by_entity_ts ON memories (org_id, namespace, entity_id, ts, memory_id)
            INCLUDE (text_hash, type, status, archived, valid_from, valid_to);
        DROP INDEX memories_by_entity;
        """,
    ),
    (
        3,
        # Entity scopes read from the index alone (the exact semantic scan and the keyword channel).
        #
        # Inline vectors. Through a join, the exact semantic scan of an entity scope (every assemble)
        # pays buffer reads and a B-tree descent into `embeddings` per row, most of that statement's
        # time. Each row may carry a copy of its text's vector for one model (`embedding_model`,
        # chosen by the store's `inline_model`; see rows.py for when a copy is made), INCLUDEd in
        # memories_by_entity_vec so that scan reads index pages only. Rows without a copy (written
        # before this migration, before their vector existed, or with ids too long for the btree
        # entry limit) are scored through the join.
        #
        # Inline tsvectors. Otherwise the keyword channel fetches each candidate's heap row for `tsv`.
        # `tsv_small` holds the same tsvector when it fits an index entry beside the row's ids (short
        # texts, the common case), INCLUDEd in memories_by_entity_kw (which replaces the slim
        # memories_by_entity_ts of migration 2 for recent events and scope counts too); rows without it
        # (long texts) are found through the partial index memories_by_entity_long. `tsv` stops being a
        # generated column (DROP EXPRESSION keeps its values, no rewrite): one trigger computes both, once.
        #
        # On an existing database: the columns are added empty (no table rewrite), the indexes built
        # under a write lock, and `loci migrate` fills the copies in batches afterwards, online.
        """
        ALTER TABLE memories ADD COLUMN embedding_model text, ADD COLUMN embedding vector,
            ADD COLUMN tsv_small tsvector;
        -- The copy lives in the heap row too (INCLUDE needs a column): kept in the row, not TOASTed
        -- (only copies that fit a btree entry are made, so the row always fits a page; other columns
        -- still move out when needed), which makes bulk loads faster.
        ALTER TABLE memories ALTER COLUMN embedding SET STORAGE PLAIN;
        ALTER TABLE memories ALTER COLUMN tsv DROP EXPRESSION;
        CREATE FUNCTION loci_memories_tsv() RETURNS trigger LANGUAGE plpgsql AS $fn$
        DECLARE
            v tsvector := to_tsvector('english'::regconfig, NEW.text);
        BEGIN
            NEW.tsv := v;
            NEW.tsv_small := CASE WHEN {TSV_INLINE_FITS} THEN v END;
            RETURN NEW;
        END
        $fn$;
        CREATE TRIGGER memories_tsv BEFORE INSERT OR UPDATE OF text, org_id, memory_id, namespace, entity_id
            ON memories FOR EACH ROW EXECUTE FUNCTION loci_memories_tsv();
        CREATE INDEX memories_by_entity_vec ON memories (org_id, namespace, entity_id, ts, memory_id)
            INCLUDE (text_hash, type, status, archived, valid_from, valid_to, embedding_model, embedding);
        CREATE INDEX memories_by_entity_kw ON memories (org_id, namespace, entity_id, ts, memory_id)
            INCLUDE (text_hash, type, status, archived, valid_from, valid_to, tsv_small);
        CREATE INDEX memories_by_entity_long ON memories (org_id, namespace, entity_id)
            WHERE tsv_small IS NULL;
        DROP INDEX memories_by_entity_ts;
        """.replace("{TSV_INLINE_FITS}", tsv_inline_fits("NEW", "v")),
    ),
    (
        4,
        # Events numbered per org: `org_seq` is the cursor's position, so a cursor tells an org nothing
        # about the others' writes (the global `seq` stays as the row id). A trigger numbers each row,
        # so a server of the previous version still inserts correctly during a rolling upgrade;
        # append_events' per-org advisory lock serializes the numbering (the unique index would turn a
        # writer that skipped the lock into an error, never a duplicate). The backfill numbers existing
        # rows in log order under the table's write lock.
        """
        ALTER TABLE events ADD COLUMN org_seq bigint;
        UPDATE events e SET org_seq = n.org_seq
            FROM (SELECT seq, row_number() OVER (PARTITION BY org_id ORDER BY seq) AS org_seq FROM events) n
            WHERE e.seq = n.seq;
        ALTER TABLE events ALTER COLUMN org_seq SET NOT NULL;
        CREATE FUNCTION loci_events_org_seq() RETURNS trigger LANGUAGE plpgsql AS $fn$
        BEGIN
            NEW.org_seq := (SELECT coalesce(max(org_seq), 0) + 1 FROM events WHERE org_id = NEW.org_id);
            RETURN NEW;
        END
        $fn$;
        CREATE TRIGGER events_org_seq BEFORE INSERT ON events
            FOR EACH ROW EXECUTE FUNCTION loci_events_org_seq();
        CREATE UNIQUE INDEX events_by_org_seq ON events (org_id, org_seq);
        CREATE INDEX events_by_org_type_seq ON events (org_id, type, org_seq);
        DROP INDEX events_by_org;
        DROP INDEX events_by_org_type;
        """,
    ),
    (
        5,
        # BM25 as the local index ranks (postgres/keywords.py): `kw` holds a memory's keyword terms as
        # the Python tokenizer makes them (engine.storage.tokenize: the same stems and stop words;
        # PostgreSQL's own `english` parser splits words differently), `speaker` an event's speaker's
        # name words. `kw_small` and `speaker_small` are their copies for the entity index when they
        # fit beside the row's ids (the trigger's rule, like migration 3's tsvector copy, which they
        # replace with the `tsv` column, its GIN index and trigger). Existing rows are tokenized by
        # `tokenize_rows` in this migration's transaction, before the index is built.
        """
        DROP TRIGGER memories_tsv ON memories;
        DROP FUNCTION loci_memories_tsv();
        DROP INDEX memories_by_entity_kw;
        DROP INDEX memories_by_entity_long;
        DROP INDEX memories_tsv;
        ALTER TABLE memories DROP COLUMN tsv, DROP COLUMN tsv_small,
            ADD COLUMN kw text[], ADD COLUMN speaker text[],
            ADD COLUMN kw_small text[], ADD COLUMN speaker_small text[];
        CREATE FUNCTION loci_memories_kw() RETURNS trigger LANGUAGE plpgsql AS $fn$
        BEGIN
            IF {KW_INLINE_FITS} THEN
                NEW.kw_small := NEW.kw;
                NEW.speaker_small := NEW.speaker;
            ELSE
                NEW.kw_small := NULL;
                NEW.speaker_small := NULL;
            END IF;
            RETURN NEW;
        END
        $fn$;
        CREATE TRIGGER memories_kw BEFORE INSERT OR UPDATE OF kw, speaker, org_id, memory_id, namespace,
            entity_id ON memories FOR EACH ROW EXECUTE FUNCTION loci_memories_kw();
        """.replace("{KW_INLINE_FITS}", kw_inline_fits("NEW")),
    ),
    (5, Retokenize()),
    (
        5,
        """
        ALTER TABLE memories ALTER COLUMN kw SET NOT NULL;
        CREATE INDEX memories_by_entity_kw ON memories (org_id, namespace, entity_id, ts, memory_id)
            INCLUDE (text_hash, type, status, archived, valid_from, valid_to, speaker_small, kw_small);
        CREATE INDEX memories_by_entity_long ON memories (org_id, namespace, entity_id)
            WHERE kw_small IS NULL;
        """,
    ),
    # The tokenizer reads one spelling per visible word (engine.storage.tokenize.normal: NFKC, the
    # invisible joiners dropped, case folded); ASCII texts tokenize as before, the others again.
    (6, Retokenize(non_ascii_only=True)),
    # An event's speaker is read by a capital in any script ("Émile: ...", `engine.letters`): the rows
    # beyond ASCII get their `speaker` again (their terms come out the same).
    (7, Retokenize(non_ascii_only=True)),
    # A slug keeps the letters that fold to no ASCII one ("борис", not "x"): the facts of such an
    # entity hold the subject its turns now give, so a new value supersedes the old one.
    (8, resubject_rows),
    # A word keeps its combining marks, a run of CJK is its character bigrams, an emoji is a term
    # (engine.storage.tokenize): ASCII texts tokenize as before, the others again.
    (9, Retokenize(non_ascii_only=True)),
)

LATEST_VERSION = MIGRATIONS[-1][0]


def migrate(url: str) -> list[int]:
    """Bring the database at `url` to the latest schema; return the versions this call applied."""
    applied: list[int] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        try:
            # Needs the privilege to create extensions the first time (on managed PostgreSQL, have an
            # admin run `CREATE EXTENSION vector` once); afterwards IF NOT EXISTS makes it a no-op.
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            if done and max(done) > LATEST_VERSION:
                raise Unavailable(
                    f"the database's schema version {max(done)} is newer than this Loci's "
                    f"({LATEST_VERSION}): it was written by a newer Loci; run that one (or a newer one) on it"
                )
            rewritten: Retokenize | None = None  # the widest rewrite of rows this call has made
            for version in sorted({v for v, _ in MIGRATIONS} - done):
                with conn.transaction():
                    for step_version, step in MIGRATIONS:
                        if step_version != version:
                            continue
                        if isinstance(step, str):
                            conn.execute(step)  # a constant, not user input
                        elif isinstance(step, Retokenize):
                            if rewritten is None or not rewritten.covers(step):
                                step(conn)
                                rewritten = step  # not covered, so at least as wide
                        else:
                            step(conn)
                    conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
                applied.append(version)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return applied
