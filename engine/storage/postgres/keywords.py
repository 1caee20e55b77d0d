"""The keyword channel on PostgreSQL: Okapi BM25 as the local index computes it, in one statement.

Each memory row stores its terms (`kw`, by `engine.storage.tokenize.terms`, the tokenizer the local
index uses: same stems, stop words and word splitting) and, for an event, its speaker's name words
(`speaker`); schema migration 5. A search is one statement over the scope's rows (`scope_rows`):
- `st`: N (the scope's rows) and the sum of their lengths (cardinality of `kw`, empty documents count)
  over exactly the eligible rows; `m`: the eligible rows holding a query term, over which `d` counts
  each distinct term's df (rows whose `kw` holds it);
- `w`: per query position, avgdl = total / N and idf = ln(1 + (N - df + 0.5) / (df + 0.5)) (Lucene's);
- per row holding a query term: tf = occurrences of the term in `kw`, and the score
  sum over the query's terms (repeats add again) of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
  with the local index's k1 and b, in float8, written in the local index's order of operations and
  added in the query's order, so the scores are the same numbers (`engine.storage.local_index.bm25`);
  best first, ties by newer timestamp, then memory_id; the top k.
The query's terms are array parameters, so one text serves every query of a scope's shape, and in
an entity scope it runs prepared (search.py's per-call planning is for scopes an index cannot bound).
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

#: above this many distinct query terms (a long turn) the rows' terms are unnested and joined to the
#: query's once, instead of each term being searched for in each row's array
LONG_QUERY = 8


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


def _term_sql() -> str:
    """One query term's BM25 part of a row, in the local index's order of operations:
    idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))."""
    norm = f"({_f(1 - B)} + {_f(B)} * x.dl / w.avgdl)"
    return f"(w.idf * (x.tf * {_f(K1 + 1)} / (x.tf + {_f(K1)} * {norm})))"


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
    scope's events and the events each of `speakers` speaks (no such columns without `speakers`).
    The terms are parameters, so the text depends only on the scope's shape and len(speakers)."""
    params.update(terms=enc_all(dict.fromkeys(query)), query=enc_all(query), k=k)
    counted, names = _speaker_counts(params, speakers)
    selected = "".join(f", st.{c}" for c in names)
    if len(params["terms"]) > LONG_QUERY:
        return _long_statement(scope, where, counted, selected)
    # df counts only rows holding a query term (`m`), read once, not every row per term; a row's
    # score sums its terms in the query's order (the ordered sum), as the local index adds them
    return f"""
        WITH s AS MATERIALIZED ({scope_rows(scope, where)}),
        m AS MATERIALIZED (SELECT s.memory_id, s.ts, s.kw FROM s WHERE s.kw && %(terms)s::text[]),
        st AS MATERIALIZED (
            SELECT count(*)::float8 AS n, coalesce(sum(cardinality(s.kw)), 0)::float8 AS total{counted}
            FROM s
        ),
        d AS MATERIALIZED (
            SELECT u.t, (SELECT count(*) FROM m WHERE m.kw @> ARRAY[u.t]) AS df
            FROM unnest(%(terms)s::text[]) AS u(t)
        ),
        {_scored(selected, _SHORT_ROWS)}
    """


#: per row holding a query term and per query term: tf by searching the row's array for the term
_SHORT_ROWS = """m CROSS JOIN w CROSS JOIN LATERAL (
                SELECT m.memory_id, m.ts, cardinality(array_positions(m.kw, w.t))::float8 AS tf,
                    cardinality(m.kw)::float8 AS dl
            ) x"""


def _long_statement(scope: Scope, where: str, counted: str, selected: str) -> str:
    """`keyword_statement` for a query of many terms: each row's terms are unnested once and joined
    to the query's (`e`: a row's tf per term it holds), so the cost grows with the scope's terms, not
    with their product with the query's; a term a row lacks adds 0.0, which changes no float, so the
    row's sum over the terms it holds, in the query's order, is the same number."""
    return f"""
        WITH s AS MATERIALIZED ({scope_rows(scope, where)}),
        st AS MATERIALIZED (
            SELECT count(*)::float8 AS n, coalesce(sum(cardinality(s.kw)), 0)::float8 AS total{counted}
            FROM s
        ),
        u AS MATERIALIZED (SELECT u.t FROM unnest(%(terms)s::text[]) AS u(t)),
        e AS MATERIALIZED (
            SELECT r.memory_id, r.ts, r.dl, k.t, count(*)::float8 AS tf
            FROM (SELECT s.memory_id, s.ts, cardinality(s.kw)::float8 AS dl, s.kw FROM s) r
            CROSS JOIN LATERAL unnest(r.kw) AS k(t) JOIN u ON u.t = k.t
            GROUP BY r.memory_id, r.ts, r.dl, k.t
        ),
        d AS MATERIALIZED (SELECT e.t, count(*) AS df FROM e GROUP BY e.t),
        {_scored(selected, "e x JOIN w ON w.t = x.t")}
    """


def _scored(selected: str, rows: str) -> str:
    """The statements' common end: `w` (per query position, avgdl and idf from `st` and `d`) and the
    top k of `rows`, a FROM clause giving `x` (memory_id, ts, tf, dl) per row and query term, each row's
    terms added in the query's order."""
    return f"""
        w AS MATERIALIZED (
            SELECT q.pos, q.t, st.total / nullif(st.n, 0) AS avgdl,
                ln(1::float8 + ((st.n - d.df) + 0.5::float8) / (d.df + 0.5::float8)) AS idf
            FROM unnest(%(query)s::text[]) WITH ORDINALITY AS q(t, pos) JOIN d ON d.t = q.t CROSS JOIN st
        )
        SELECT h.memory_id, h.score, h.ts{selected}
        FROM st LEFT JOIN LATERAL (
            SELECT x.memory_id, x.ts, sum({_term_sql()} ORDER BY w.pos) AS score
            FROM {rows}
            WHERE w.avgdl > 0
            GROUP BY x.memory_id, x.ts
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
    # an entity's scope is read through its index whatever the entity, so a generic plan is as good
    # and prepared saves planning; without an entity, a plan must see how selective the scope is
    rows = conn.execute(stmt, params, prepare=scope.entity_id is not None).fetchall()
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
