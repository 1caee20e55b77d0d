"""The keyword channel on PostgreSQL: Okapi BM25 as the local index computes it, in one statement.

Each memory row stores its terms (`kw`, by `engine.storage.tokenize.terms`, the tokenizer the local
index uses: same stems, stop words and word splitting) and, for an event, its speaker's name words
(`speaker`); schema migration 5. A search is one statement over the scope's rows (`scope_rows`):
- `st`: N (the scope's rows) and the sum of their lengths (cardinality of `kw`, empty documents count)
  over exactly the eligible rows; `m`: the eligible rows holding a query term, over which `dm` counts
  each distinct term's df (rows whose `kw` holds it);
- `w`: avgdl = total / N and per term idf = ln(1 + (N - df + 0.5) / (df + 0.5)) (Lucene's);
- per row holding a query term: tf = occurrences of the term in `kw`, and the score
  sum over the query's terms (repeats add again) of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
  with the local index's k1 and b, in float8, written in the local index's order of operations, so
  the scores are the same numbers (`engine.storage.local_index.bm25`); best first, ties by newer
  timestamp, then memory_id; the top k.
Given the words the caller asks `speaker_shares` of next (the query's names), the same statement
counts the scope's events and those each word speaks (`Speakers`), which `speaker_shares` answers
from for the same scope, so leaving speakers' names out of the semantic query costs no statement of
its own (and a query without names counts nothing).

In an entity scope (every assemble), rows whose terms fit the entity index entry (`kw_small`,
`speaker_small`: short texts, the common case) are read from memories_by_entity_kw alone; the others
through the partial index of rows without the copy (memories_by_entity_long) and the heap. Without
an entity, the scope's rows are read from the heap. Either way the cost grows with the scope, not the
table: the statistics are exact, so every eligible row is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import psycopg

from engine.storage.base import Scope
from engine.storage.local_index.bm25 import K1, B
from engine.storage.postgres.pgtext import enc, enc_all
from engine.storage.tokenize import tokenize

Params = dict[str, Any]


class Speakers(msgspec.Struct, frozen=True):
    """A scope's events and, per counted word, the events whose speaker's name holds it."""

    events: int
    words: dict[str, int]

    def shares(self, words: Sequence[str]) -> list[float] | None:
        """Each word's share of the events (`SearchBackend.speaker_shares`), or None when one of `words`
        was not counted."""
        if any(w not in self.words for w in words):
            return None
        if self.events == 0:
            return [0.0] * len(words)
        return [self.words.get(w, 0) / self.events for w in words]


def scope_rows(scope: Scope, where: str) -> str:
    """SQL of the scope's rows as (memory_id, ts, type, speaker, kw); `where` = search.scope_filter."""
    if scope.entity_id is None:
        return f"SELECT m.memory_id, m.ts, m.type, m.speaker, m.kw FROM memories m WHERE {where}"
    return f"""
        SELECT m.memory_id, m.ts, m.type, m.speaker_small AS speaker, m.kw_small AS kw FROM memories m
        WHERE m.kw_small IS NOT NULL AND {where}
        UNION ALL
        SELECT m.memory_id, m.ts, m.type, m.speaker, m.kw FROM memories m
        WHERE m.kw_small IS NULL AND {where}
    """


def _f(x: float) -> str:
    return f"{float(x)!r}::float8"


def _score_sql(query: Sequence[int]) -> str:
    """The BM25 sum over the query's terms (indexes into the distinct terms), in the local index's
    order: acc = 0.0, then acc += idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))."""
    acc = "0::float8"
    for i in query:
        norm = f"({_f(1 - B)} + {_f(B)} * x.dl / w.avgdl)"
        term = f"(w.idf{i} * (x.tf{i} * {_f(K1 + 1)} / (x.tf{i} + {_f(K1)} * {norm})))"
        acc = f"({acc} + {term})"
    return acc


def _speaker_counts(params: Params, speakers: Sequence[str]) -> tuple[str, list[str]]:
    """(the `st` columns counting the scope's events and those each of `speakers` speaks, their names);
    none without speakers."""
    if not speakers:
        return "", []
    params.update({f"w{i}": enc(w) for i, w in enumerate(speakers)})
    counts = "".join(
        f", count(*) FILTER (WHERE s.type = 'event' AND s.speaker @> ARRAY[%(w{i})s]::text[]) AS sw{i}"
        for i in range(len(speakers))
    )
    return f", count(*) FILTER (WHERE s.type = 'event') AS ev{counts}", [
        "ev",
        *(f"sw{i}" for i in range(len(speakers))),
    ]


def keyword_statement(
    scope: Scope, where: str, params: Params, query: Sequence[str], k: int, speakers: Sequence[str] = ()
) -> str:
    """The statement (and, into `params`, its parameters) of a search for the query's terms `query`
    (tokens, repeats kept): one row per hit, or one row of NULLs without any, each carrying the
    scope's events and the events each of `speakers` speaks (no such columns without `speakers`)."""
    distinct = list(dict.fromkeys(query))
    index = {t: i for i, t in enumerate(distinct)}
    params.update({f"t{i}": enc(t) for i, t in enumerate(distinct)}, terms=enc_all(distinct), k=k)
    counted, names = _speaker_counts(params, speakers)
    carried, selected = "".join(f", st.{c}" for c in names), "".join(f", w.{c}" for c in names)
    dfs = ", ".join(
        f"count(*) FILTER (WHERE m.kw @> ARRAY[%(t{i})s]::text[]) AS df{i}" for i in index.values()
    )
    idfs = ", ".join(
        f"ln(1::float8 + ((st.n - dm.df{i}) + 0.5::float8) / (dm.df{i} + 0.5::float8)) AS idf{i}"
        for i in index.values()
    )
    tfs = ", ".join(
        f"cardinality(array_positions(m.kw, %(t{i})s::text))::float8 AS tf{i}" for i in index.values()
    )
    # df counts only rows holding a query term: they are read once (`m`), not every row per term
    return f"""
        WITH s AS MATERIALIZED ({scope_rows(scope, where)}),
        m AS MATERIALIZED (SELECT s.memory_id, s.ts, s.kw FROM s WHERE s.kw && %(terms)s::text[]),
        st AS (
            SELECT count(*)::float8 AS n, coalesce(sum(cardinality(s.kw)), 0)::float8 AS total{counted}
            FROM s
        ),
        dm AS (SELECT {dfs} FROM m),
        w AS (SELECT st.n, st.total / nullif(st.n, 0) AS avgdl, {idfs}{carried} FROM st, dm)
        SELECT h.memory_id, h.score, h.ts{selected}
        FROM w LEFT JOIN LATERAL (
            SELECT x.memory_id, x.ts, {_score_sql([index[t] for t in query])} AS score
            FROM (SELECT m.memory_id, m.ts, cardinality(m.kw)::float8 AS dl, {tfs} FROM m) x
            WHERE w.avgdl > 0
            ORDER BY score DESC, x.ts DESC, x.memory_id
            LIMIT %(k)s
        ) h ON true
    """


def keyword_search(
    conn: psycopg.Connection[Any],
    scope: Scope,
    where: str,
    params: Params,
    text: str,
    k: int,
    speakers: Sequence[str] = (),
) -> tuple[list[tuple[str, float, Any]], Speakers | None]:
    """(rows (memory_id, score, ts) best first, the scope's events each of `speakers` speaks, or None
    without speakers); no statement (and no speakers) for a query without terms or k <= 0."""
    query = tokenize(text)
    if not query or k <= 0:
        return [], None
    words = list(dict.fromkeys(speakers))
    stmt = keyword_statement(scope, where, params, query, k, words)
    rows = conn.execute(stmt, params, prepare=False).fetchall()
    hits = [(r[0], float(r[1]), r[2]) for r in rows if r[0] is not None]
    if not words:
        return hits, None
    row = rows[0]
    return hits, Speakers(int(row[3] or 0), {w: int(c or 0) for w, c in zip(words, row[4:], strict=True)})


def count_speakers(
    conn: psycopg.Connection[Any], scope: Scope, where: str, params: Params, words: Sequence[str]
) -> list[float]:
    """`SearchBackend.speaker_shares` by its own statement: per word, the in-scope events whose speaker's name
    holds it, over the in-scope events."""
    counts = ", ".join(
        f"count(*) FILTER (WHERE s.type = 'event' AND s.speaker @> ARRAY[%(w{i})s]::text[])"
        for i in range(len(words))
    )
    params.update({f"w{i}": enc(w) for i, w in enumerate(words)})
    stmt = f"""
        WITH s AS MATERIALIZED ({scope_rows(scope, where)})
        SELECT count(*) FILTER (WHERE s.type = 'event'), {counts} FROM s
    """
    row = conn.execute(stmt, params, prepare=False).fetchone()
    if not row or not row[0]:
        return [0.0] * len(words)
    return [int(c) / int(row[0]) for c in row[1:]]
