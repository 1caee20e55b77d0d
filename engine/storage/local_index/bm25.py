"""BM25 over an inverted index, with corpus statistics taken over the eligible scope.

Scores are Okapi BM25 (k1=1.5, b=0.75) with Lucene's idf, over exactly the scope's documents
(tokenized with `tokenize.tokenize`) and the tokenized query:
- N = eligible documents, avgdl = their mean token count (empty documents count);
- idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)) with df counted over the eligible documents: always
  positive, so a term found in most (or all) of a small scope's documents still finds them, and a
  term's weight needs only N and its own df (what a database can count), never the whole vocabulary;
- a repeated query term adds its contribution each time; a term absent from the scope adds 0.
Every document holding a query term is returned.

Speed: postings are numpy arrays in one CSR block, with the rows added one by one since kept in
lists and merged into the block once they reach a quarter of it (so a term's postings are at most
one concatenation away, with no cache to keep). Document lengths and df are numpy. `df_live` (df
over all live rows) is kept up to date on every add/remove, so the scope's df for every term is
either counted from the eligible rows or derived as df_live minus the counts of the live-but-excluded
rows, whichever touches fewer rows. A scope's statistics are kept by its ScopeView (view.py).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import chain
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from engine.storage.local_index.columns import Mask
from engine.storage.local_index.growable import Growable

K1 = 1.5
B = 0.75
#: postings added one by one are merged into the CSR block when they exceed this or a quarter of it
COMPACT_MIN = 4096

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def idf_of(n: float, df: float) -> float:
    """Lucene's BM25 idf of a term in `df` of `n` documents (see the module docstring), as ln(1 + x):
    the libm `log` PostgreSQL's ln() calls too, so both backends compute the same number."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


class ScopeStats(NamedTuple):
    n: int  # eligible documents
    avgdl: float
    df: IntArray  # per term, over the eligible documents


class KeywordIndex:
    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        # postings as CSR over term ids < len(self._base_ptr) - 1, plus rows appended since (per term)
        self._base_ptr: IntArray = np.zeros(1, dtype=np.int64)
        self._base_rows: IntArray = np.zeros(0, dtype=np.int64)
        self._base_tfs: FloatArray = np.zeros(0, dtype=np.float64)
        self._post_more: dict[int, tuple[list[int], list[float]]] = {}
        self._more = 0  # postings in _post_more
        self.doc_len = Growable(np.float64, 0.0)
        self._nz_start = Growable(np.int64, 0)  # per row: first position in the nz arrays
        self._nz_count = Growable(np.int64, 0)  # per row: number of distinct terms
        self._nz_term = Growable(np.int64, 0)  # per (row, distinct term)
        self._nz_tf = Growable(np.float64, 0.0)  # per (row, distinct term)
        self.df_live = Growable(np.int64, 0)  # per term

    def _term_id(self, term: str) -> int:
        tid = self.vocab.get(term)
        if tid is None:
            tid = len(self.vocab)
            self.vocab[term] = tid
            self.df_live.append(0)
        return tid

    def add(self, row: int, tokens: Sequence[str]) -> None:
        """Append one row (rows are appended in order)."""
        assert row == self.doc_len.size, "rows are appended in order"
        counts = Counter(tokens)
        self.doc_len.append(float(len(tokens)))
        self._nz_start.append(self._nz_term.size)
        self._nz_count.append(len(counts))
        tids = []
        for term, tf in counts.items():
            tid = self._term_id(term)
            more = self._post_more.setdefault(tid, ([], []))
            more[0].append(row)
            more[1].append(float(tf))
            tids.append(tid)
        self._nz_term.extend(tids)
        self._nz_tf.extend([float(tf) for tf in counts.values()])
        if tids:
            df = self.df_live.view
            df[np.asarray(tids, dtype=np.int64)] += 1
        self._more += len(tids)
        if self._more > max(COMPACT_MIN, self._base_rows.shape[0] // 4):
            self._compact()

    def _compact(self) -> None:
        """Rebuild the CSR block from every row's terms (rows ascending within a term)."""
        terms, tfs = self._nz_term.view, self._nz_tf.view
        rows = np.repeat(np.arange(self._nz_count.size, dtype=np.int64), self._nz_count.view)
        order = np.argsort(terms, kind="stable")
        counts = np.bincount(terms, minlength=len(self.vocab))
        self._base_ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self._base_rows = rows[order]
        self._base_tfs = tfs[order].astype(np.float64)
        self._post_more.clear()
        self._more = 0

    def add_bulk(self, first_row: int, docs: Sequence[Sequence[str]]) -> None:
        """Append many rows at once (first_row, first_row + 1, ...): vectorized postings."""
        if len(docs) < 64 or self.doc_len.size:
            for i, tokens in enumerate(docs):
                self.add(first_row + i, tokens)
            return
        assert first_row == 0, "bulk building starts an empty index"
        vocab_map = self.vocab
        for term in set(chain.from_iterable(docs)):
            if term not in vocab_map:
                vocab_map[term] = len(vocab_map)
        vocab = len(vocab_map)
        self.df_live.extend(np.zeros(vocab - self.df_live.size, dtype=np.int64))
        lens = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
        flat = np.fromiter(
            map(vocab_map.__getitem__, chain.from_iterable(docs)), dtype=np.int64, count=int(lens.sum())
        )
        rows = np.repeat(np.arange(len(docs), dtype=np.int64), lens)
        pair, tf = np.unique(rows * vocab + flat, return_counts=True)  # sorted by (row, term)
        p_rows, p_terms = pair // vocab, pair % vocab
        self.doc_len.extend(lens.astype(np.float64))
        per_row = np.bincount(p_rows, minlength=len(docs))
        self._nz_start.extend(np.concatenate(([0], np.cumsum(per_row)[:-1])))
        self._nz_count.extend(per_row)
        self._nz_term.extend(p_terms)
        self._nz_tf.extend(tf.astype(np.float64))
        self.df_live.view[:] += np.bincount(p_terms, minlength=vocab)
        self._compact()

    def remove(self, row: int) -> None:
        """The row left the live set (its postings stay; the mask excludes it)."""
        df = self.df_live.view
        df[self._terms_of_rows(np.asarray([row], dtype=np.int64))] -= 1

    def _terms_of_rows(self, rows: IntArray) -> IntArray:
        counts = self._nz_count.view[rows]
        total = int(counts.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64)
        starts = self._nz_start.view[rows]
        offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        return self._nz_term.view[offsets + np.arange(total, dtype=np.int64)]

    def _postings(self, tid: int) -> tuple[IntArray, FloatArray]:
        if tid + 1 < self._base_ptr.shape[0]:
            lo, hi = int(self._base_ptr[tid]), int(self._base_ptr[tid + 1])
            base_rows, base_tfs = self._base_rows[lo:hi], self._base_tfs[lo:hi]
        else:
            base_rows, base_tfs = self._base_rows[:0], self._base_tfs[:0]
        more = self._post_more.get(tid)
        if more is None:
            return base_rows, base_tfs
        return (
            np.concatenate((base_rows, np.asarray(more[0], dtype=np.int64))),
            np.concatenate((base_tfs, np.asarray(more[1], dtype=np.float64))),
        )

    def scope_df(self, mask: Mask, live: Mask) -> IntArray:
        eligible = np.flatnonzero(mask)
        excluded = np.flatnonzero(live & ~mask)
        vocab = self.df_live.size
        if eligible.size <= excluded.size:
            return np.bincount(self._terms_of_rows(eligible), minlength=vocab)
        removed = np.bincount(self._terms_of_rows(excluded), minlength=vocab)
        return self.df_live.view - removed

    def scope_stats(self, mask: Mask, live: Mask) -> ScopeStats:
        """N, avgdl and df over the eligible rows (a ScopeView keeps them)."""
        n = int(mask.sum())
        avgdl = float(self.doc_len.view[mask].sum()) / n if n else 0.0
        if avgdl == 0.0:
            return ScopeStats(n, avgdl, np.zeros(0, dtype=np.int64))
        return ScopeStats(n, avgdl, self.scope_df(mask, live))

    def scores(self, stats: ScopeStats, mask: Mask, query: Sequence[str]) -> tuple[IntArray, FloatArray]:
        """(rows, scores) of the eligible rows with a positive score, unordered; `stats` are the
        scope's (`scope_stats`)."""
        tids = [self.vocab[t] for t in query if t in self.vocab]
        empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
        n, avgdl, df = stats
        if not tids or n == 0 or avgdl == 0.0:
            return empty
        doc_len = self.doc_len.view
        acc = np.zeros(doc_len.shape[0], dtype=np.float64)
        for tid in tids:
            d = float(df[tid]) if tid < df.shape[0] else 0.0
            if d == 0.0:
                continue
            idf = idf_of(n, d)
            rows, tfs = self._postings(tid)
            keep = mask[rows]
            r, tf = rows[keep], tfs[keep]
            acc[r] += idf * (tf * (K1 + 1) / (tf + K1 * (1 - B + B * doc_len[r] / avgdl)))
        hit = np.flatnonzero(acc > 0)
        return hit.astype(np.int64), acc[hit]
