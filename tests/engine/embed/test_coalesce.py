"""Coalescer: concurrent embed calls merged into one run, each caller getting its own rows."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from engine.embed.cache import EmbeddingCache, EmbedStats
from engine.embed.coalesce import Coalescer
from engine.embed.hash import HashEmbedder
from engine.models import text_hash
from engine.storage.base import Vector
from engine.storage.in_memory import InMemoryStore


def _rows(texts: list[str]) -> np.ndarray:
    """A row per text that identifies it: [len(text), ord(first char), position-free]."""
    return np.array([[len(t), ord(t[0]) if t else 0] for t in texts], dtype=np.float32)


class GatedRun:
    """The first run blocks until `wait_for` more calls are queued (so they must share the next run);
    records the size of every run."""

    def __init__(self, coalescer_ref: list[Coalescer], wait_for: int) -> None:
        self.ref = coalescer_ref
        self.wait_for = wait_for
        self.sizes: list[int] = []
        self.first = True

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.sizes.append(len(texts))
        if self.first:
            self.first = False
            deadline = time.monotonic() + 10
            while len(self.ref[0]._pending) < self.wait_for and time.monotonic() < deadline:
                time.sleep(0.001)
        return _rows(texts)


def _call_all(
    c: Coalescer, calls: list[list[str]], *, first_alone: bool = True
) -> list[np.ndarray | BaseException]:
    out: list[np.ndarray | BaseException] = [np.zeros(0)] * len(calls)

    def run(i: int) -> None:
        try:
            out[i] = c.embed(calls[i])
        except BaseException as exc:  # noqa: BLE001 - returned to the test
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    threads[0].start()
    if first_alone:  # the first call starts its run before the others arrive
        deadline = time.monotonic() + 10
        while not c._busy and time.monotonic() < deadline:
            time.sleep(0.001)
    for t in threads[1:]:
        t.start()
    for t in threads:
        t.join(20)
    return out


def test_calls_waiting_during_a_run_share_the_next_one_and_get_their_own_rows() -> None:
    ref: list[Coalescer] = []
    gate = GatedRun(ref, wait_for=3)
    c = Coalescer(gate, max_texts=8)
    ref.append(c)
    calls = [["a"], ["bb", "ccc"], ["dddd"], ["eeeee"]]
    out = _call_all(c, calls)
    assert gate.sizes == [1, 4]  # the first alone; the three that waited in one run
    assert c.batches == 2 and c.texts == 5
    for texts, rows in zip(calls, out, strict=True):
        assert isinstance(rows, np.ndarray)
        np.testing.assert_array_equal(rows, _rows(texts))


def test_a_merged_run_never_exceeds_max_texts() -> None:
    ref: list[Coalescer] = []
    gate = GatedRun(ref, wait_for=4)
    c = Coalescer(gate, max_texts=2)
    ref.append(c)
    calls = [["a"], ["b"], ["c"], ["d"], ["e", "f", "g"]]  # the last is larger than max_texts: alone
    out = _call_all(c, calls)
    assert gate.sizes[0] == 1 and sum(gate.sizes) == 7
    assert all(size <= 2 or size == 3 for size in gate.sizes)  # 3 only as the big call alone
    assert gate.sizes.count(3) == 1 and 2 in gate.sizes  # and some of the small ones were merged
    for texts, rows in zip(calls, out, strict=True):
        assert isinstance(rows, np.ndarray)
        np.testing.assert_array_equal(rows, _rows(texts))


def test_a_failed_run_fails_every_call_in_it_and_the_next_calls_still_work() -> None:
    ref: list[Coalescer] = []
    state = {"n": 0}

    def run(texts: list[str]) -> np.ndarray:
        state["n"] += 1
        if state["n"] == 1:
            deadline = time.monotonic() + 10
            while len(ref[0]._pending) < 2 and time.monotonic() < deadline:
                time.sleep(0.001)
            return _rows(texts)
        if state["n"] == 2:
            raise RuntimeError("model fell over")
        return _rows(texts)

    c = Coalescer(run)
    ref.append(c)
    out = _call_all(c, [["a"], ["b"], ["c"]])
    assert isinstance(out[0], np.ndarray)
    assert all(isinstance(o, RuntimeError) for o in out[1:])  # b and c shared the failed run
    np.testing.assert_array_equal(c.embed(["zz"]), _rows(["zz"]))
    assert not c._busy and not c._pending


def test_an_idle_call_runs_at_once_alone() -> None:
    sizes: list[int] = []

    def run(texts: list[str]) -> np.ndarray:
        sizes.append(len(texts))
        return _rows(texts)

    c = Coalescer(run)
    for t in ("a", "bb", "ccc"):
        np.testing.assert_array_equal(c.embed([t]), _rows([t]))
    assert sizes == [1, 1, 1]


def test_many_threads_each_get_exactly_their_rows() -> None:
    def slow_rows(texts: list[str]) -> np.ndarray:
        time.sleep(0.002)
        return _rows(texts)

    c = Coalescer(slow_rows, max_texts=4)
    texts = [chr(ord("a") + i % 26) * (1 + i % 7) for i in range(200)]
    results: dict[int, np.ndarray] = {}
    lock = threading.Lock()

    def run(start: int) -> None:
        for i in range(start, len(texts), 8):
            rows = c.embed([texts[i]])
            with lock:
                results[i] = rows

    threads = [threading.Thread(target=run, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == len(texts)
    for i, rows in results.items():
        np.testing.assert_array_equal(rows, _rows([texts[i]]))
    assert c.batches < len(texts)  # some calls were merged


class CountingStore(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.lookups = 0

    def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, Vector]:
        self.lookups += 1
        return super().get_embeddings(model, text_hashes)


def test_query_embeddings_do_not_read_the_store() -> None:
    store = CountingStore()
    cache = EmbeddingCache(HashEmbedder(), store)
    cache.embed(["where does alice live"], persist=False)
    cache.embed(["where does alice live"], persist=False)  # the LRU answers
    assert store.lookups == 0


@pytest.mark.parametrize("defer", [False, True])
def test_a_text_embedded_first_as_a_query_is_stored_by_a_write(defer: bool) -> None:
    """The LRU holds query vectors too: a write asks the store for every text, and stores the vector
    of one the LRU held but the store lacks (a turn is embedded as the query before it is stored)."""
    store = CountingStore()
    cache = EmbeddingCache(HashEmbedder(), store)
    text = "I went to the dentist on Tuesday."
    (query,) = cache.embed([text], persist=False)
    stats = EmbedStats()
    cache.embed([text], persist=True, defer=defer, stats=stats)
    assert stats.texts == 0 and store.lookups == 1  # not embedded twice
    if defer:
        with store.transaction():
            cache.save([text])
    np.testing.assert_array_equal(
        store.get_embeddings(cache.model, [text_hash(text)])[text_hash(text)], query
    )


def test_stored_vectors_are_looked_up_never_embedded() -> None:
    """`stored` (the rerank's lookup): the LRU, then the store; a text with no vector stays missing
    (a read never embeds or writes), and store hits are not read twice."""
    store = CountingStore()
    embedder = HashEmbedder()
    writer = EmbeddingCache(embedder, store)
    writer.embed(["kept text"])  # stored with its vector
    cache = EmbeddingCache(embedder, store)
    kept, absent = text_hash("kept text"), text_hash("never embedded")
    found = cache.stored([kept, absent])
    assert set(found) == {kept} and np.array_equal(found[kept], embedder.embed(["kept text"])[0])
    assert store.lookups == 2  # the writer's lookup, then this one
    assert set(cache.stored([kept])) == {kept} and store.lookups == 2  # from the LRU
    assert store.get_embeddings(embedder.model, [absent]) == {}  # nothing was written
