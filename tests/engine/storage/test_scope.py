"""Scope semantics, the same for every channel and for scope_size."""

from __future__ import annotations

import msgspec
import numpy as np

from engine.embed.hash import HashEmbedder
from engine.models import Memory, text_hash
from engine.storage.base import Scope, Store
from engine.storage.scope_filter import as_seen, in_scope
from tests.engine.storage.conftest import at, mem

NOW = at(1000)


def _embed(store: Store, memories: list[Memory], emb: HashEmbedder) -> None:
    texts = [m.text for m in memories]
    store.put_embeddings(emb.model, {text_hash(t): v for t, v in zip(texts, emb.embed(texts), strict=True)})


def _channels(store: Store, scope: Scope, emb: HashEmbedder) -> dict[str, set[str]]:
    q = emb.embed(["apple"])[0]
    return {
        "vector": {h.memory_id for h in store.search.vector_search(scope, emb.model, q, 100)},
        "keyword": {h.memory_id for h in store.search.keyword_search(scope, "apple", 100)},
        "graph": {h.memory_id for h in store.search.graph_search(scope, ["ent:x"], 0, 100)},
    }


def _corpus() -> dict[str, Memory]:
    common = dict(text="apple pie", entity_id="ent:x")
    return {
        "plain": mem(**common, timestamp=at(10)),
        "agent": mem(**common, agent_id="g1", timestamp=at(10)),
        "other_entity": mem(text="apple pie", entity_id="ent:y", subject="ent:x", timestamp=at(10)),
        "archived": mem(**common, archived=True, timestamp=at(10)),
        "superseded": mem(
            **common, status="superseded", valid_from=at(10), valid_to=at(500), timestamp=at(10)
        ),
        # tied with another value of its key: a reader as of now sees it (both values), until it ends
        "disputed": mem(**common, status="disputed", timestamp=at(10)),
        "disputed_ended": mem(
            **common, status="disputed", valid_from=at(10), valid_to=at(500), timestamp=at(10)
        ),
        "expired": mem(**common, valid_to=at(900), timestamp=at(10)),
        "expires_later": mem(**common, valid_to=at(2000), timestamp=at(10)),
        "expires_now": mem(**common, valid_to=NOW, timestamp=at(10)),
        "future_valid": mem(**common, valid_from=at(700), timestamp=at(10)),
        "new": mem(**common, timestamp=at(600)),
        # not yet: stated to begin after now (a read as of now leaves it out until then)
        "starts_later": mem(**common, valid_from=at(1500), timestamp=at(10)),
        # a timestamp after now is when it was said (a client clock ahead), not a validity: current
        "recorded_later": mem(**common, timestamp=at(1200)),
        # superseded by a value dated after now: it holds until that one begins
        "ends_later": mem(
            **common, status="superseded", valid_from=at(10), valid_to=at(1500), timestamp=at(10)
        ),
        "ns2": mem(**common, namespace="ns2", timestamp=at(10)),
        "org_b": mem(**common, org_id="org_b", timestamp=at(10)),
    }


def _fillers() -> list[Memory]:
    """Always-eligible (default scope) memories without the query word: they keep BM25 idf positive."""
    return [mem(text=f"zebra crossing {i}", entity_id="ent:f", timestamp=at(1)) for i in range(10)]


def _names(corpus: dict[str, Memory], ids: set[str]) -> set[str]:
    return {name for name, m in corpus.items() if m.memory_id in ids}


def test_scope_semantics_every_channel(store: Store) -> None:
    emb = HashEmbedder(64)
    corpus = _corpus()
    fillers = _fillers()
    everything = list(corpus.values()) + fillers
    store.put_memories(everything)
    _embed(store, everything, emb)
    live_now = {
        "plain",
        "agent",
        "disputed",
        "other_entity",
        "expires_later",
        "future_valid",
        "new",
        "ends_later",
        "recorded_later",
    }
    picked = ("plain", "agent", "archived", "expired", "org_b")
    chosen = frozenset([*(corpus[n].memory_id for n in picked), "mem_unknown"])
    cases: list[tuple[Scope, set[str] | None]] = [
        (Scope(org_id="org_a", now=NOW), live_now),
        # mem0's show_expired: past their valid_to too, still only active ones
        (Scope(org_id="org_a", now=NOW, expired=True), live_now | {"expired", "expires_now"}),
        (Scope(org_id="org_a", now=NOW, as_of=at(500), expired=True), None),
        (Scope(org_id="org_a", now=at(1600)), live_now - {"ends_later"} | {"starts_later"}),
        (Scope(org_id="org_a", now=NOW, agent_id="g1"), {"agent"}),
        (Scope(org_id="org_a", now=NOW, entity_id="ent:y"), {"other_entity"}),
        (Scope(org_id="org_a", now=NOW, entity_id="ent:none"), set()),
        (Scope(org_id="org_a", now=NOW, agent_id="g_none"), set()),
        (Scope(org_id="org_a", namespace="ns2", now=NOW), {"ns2"}),
        (Scope(org_id="org_b", now=NOW), {"org_b"}),
        (Scope(org_id="org_c", now=NOW), set()),
        # a caller's selection: only those memories, and only when the rest of the scope admits them
        (Scope(org_id="org_a", now=NOW, memory_ids=chosen), {"plain", "agent"}),
        (Scope(org_id="org_a", now=NOW, memory_ids=chosen, agent_id="g1"), {"agent"}),
        (Scope(org_id="org_a", now=NOW, memory_ids=frozenset()), set()),
        # as_of: status ignored, validity decides
        (
            Scope(org_id="org_a", now=NOW, as_of=at(100)),
            {
                "plain",
                "agent",
                "other_entity",
                "superseded",
                "disputed",
                "disputed_ended",
                "expired",
                "expires_later",
                "expires_now",
                "ends_later",
            },
        ),
        (
            Scope(org_id="org_a", now=NOW, as_of=at(500)),
            {
                "plain",
                "agent",
                "other_entity",
                "disputed",
                "expired",
                "expires_later",
                "expires_now",
                "ends_later",
            },
        ),
        (
            Scope(org_id="org_a", now=NOW, as_of=at(950)),
            {
                "plain",
                "agent",
                "other_entity",
                "disputed",
                "expires_later",
                "expires_now",
                "future_valid",
                "new",
                "ends_later",
            },
        ),
    ]
    for scope, maybe in cases:
        # as_of decides validity by itself: `expired` changes nothing there
        expected = maybe if maybe is not None else dict(cases)[msgspec.structs.replace(scope, expired=False)]
        assert expected is not None
        assert {n for n, m in corpus.items() if in_scope(m, scope)} == expected, scope  # oracle agrees
        n_fillers = sum(1 for f in fillers if in_scope(f, scope))
        assert store.search.scope_size(scope) == len(expected) + n_fillers, scope
        for channel, ids in _channels(store, scope, emb).items():
            # other_entity's memory is about ent:y but its subject is ent:x, so graph depth 0 finds it
            assert _names(corpus, ids) == expected, (channel, scope)


def test_as_seen_shows_no_end_after_as_of() -> None:
    paris = mem(text="User lives in Paris", status="superseded", valid_from=at(10), valid_to=at(500))
    then = as_seen(paris, Scope(org_id="org_a", now=NOW, as_of=at(100)))
    assert (then.status, then.valid_to, then.valid_from) == ("active", None, at(10))  # Berlin came later
    for scope in (Scope(org_id="org_a", now=NOW, as_of=at(500)), Scope(org_id="org_a", now=NOW)):
        assert as_seen(paris, scope) == paris  # ended by then, or read as of now
    disputed = mem(text="x", status="disputed", valid_from=at(10), valid_to=at(500))
    assert as_seen(disputed, Scope(org_id="org_a", now=NOW, as_of=at(100))).status == "disputed"


def test_index_follows_reputs_and_deletes(store: Store) -> None:
    emb = HashEmbedder(64)
    scope = Scope(org_id="org_a", now=NOW)
    fillers = _fillers()
    a = mem(text="apple", entity_id="ent:x", timestamp=at(1))
    b = mem(text="apple", entity_id="ent:x", timestamp=at(2))
    store.put_memories([a, b, *fillers])
    _embed(store, [a], emb)  # b has the same text, so the same cached vector
    assert store.search.scope_size(scope) == 12  # builds the index before anything changes
    hits = store.search.vector_search(scope, emb.model, emb.embed(["apple"])[0], 2)
    assert [h.memory_id for h in hits] == [b.memory_id, a.memory_id]  # equal scores: newer first
    # a vector arriving after the index exists is picked up
    c = mem(text="apple banana", entity_id="ent:x", timestamp=at(3))
    store.put_memories([c])
    assert c.memory_id not in {
        h.memory_id for h in store.search.vector_search(scope, emb.model, emb.embed(["apple"])[0], 20)
    }
    _embed(store, [c], emb)
    got = {h.memory_id for h in store.search.vector_search(scope, emb.model, emb.embed(["apple"])[0], 3)}
    assert got == {a.memory_id, b.memory_id, c.memory_id}
    for changed in (
        msgspec.structs.replace(a, status="superseded"),
        msgspec.structs.replace(a, archived=True),
        msgspec.structs.replace(a, valid_to=at(5)),
        msgspec.structs.replace(a, namespace="elsewhere"),
    ):
        store.put_memories([changed])
        assert store.search.scope_size(scope) == 12
        for ids in _channels(store, scope, emb).values():
            assert a.memory_id not in ids
        store.put_memories([a])
        assert store.search.scope_size(scope) == 13
        assert a.memory_id in {h.memory_id for h in store.search.keyword_search(scope, "apple", 20)}
    store.delete_memory("org_a", b.memory_id)
    assert store.search.scope_size(scope) == 12
    channels = _channels(store, scope, emb)
    assert channels["keyword"] == channels["graph"] == {a.memory_id, c.memory_id}
    assert b.memory_id not in channels["vector"]
    # a text change: the keyword index follows
    store.put_memories([msgspec.structs.replace(c, text="cherry")])
    assert {h.memory_id for h in store.search.keyword_search(scope, "apple", 5)} == {a.memory_id}
    assert {h.memory_id for h in store.search.keyword_search(scope, "cherry", 5)} == {c.memory_id}


def test_rollback_leaves_index_untouched(store: Store) -> None:
    scope = Scope(org_id="org_a", now=NOW)
    a = mem(text="apple", timestamp=at(5))
    store.put_memories([a, *_fillers()])
    assert store.search.scope_size(scope) == 11

    class Boom(Exception):
        pass

    try:
        with store.transaction():
            store.put_memories([mem(text="apple two", timestamp=at(6))])
            store.delete_memory("org_a", a.memory_id)
            store.search.scope_size(scope)  # a search inside the block may (re)build the index
            raise Boom
    except Boom:
        pass
    assert store.search.scope_size(scope) == 11
    assert [h.memory_id for h in store.search.keyword_search(scope, "apple", 5)] == [a.memory_id]


def test_vector_without_cached_embedding_is_not_a_candidate(store: Store) -> None:
    emb = HashEmbedder(16)
    a, b = mem(text="one", timestamp=at(5)), mem(text="two", timestamp=at(6))
    store.put_memories([a, b])
    _embed(store, [a], emb)
    hits = store.search.vector_search(Scope(org_id="org_a", now=NOW), emb.model, emb.embed(["one"])[0], 5)
    assert [h.memory_id for h in hits] == [a.memory_id]
    assert np.isclose(hits[0].raw, 1.0)


def test_index_built_inside_rolled_back_transaction_is_discarded(store: Store) -> None:
    emb = HashEmbedder(16)
    scope = Scope(org_id="org_a", now=NOW)
    a = mem(text="apple", timestamp=at(5))
    store.put_memories([a, *_fillers()])

    class Boom(Exception):
        pass

    b = mem(text="apple pie", timestamp=at(6))
    try:
        with store.transaction():
            store.put_memories([b])
            _embed(store, [a, b], emb)
            # first searches ever: they build the index and load vectors inside the open transaction
            store.search.keyword_search(scope, "apple", 5)
            store.search.vector_search(scope, emb.model, emb.embed(["apple"])[0], 5)
            raise Boom
    except Boom:
        pass
    assert [h.memory_id for h in store.search.keyword_search(scope, "apple", 5)] == [a.memory_id]
    assert store.search.vector_search(scope, emb.model, emb.embed(["apple"])[0], 5) == []
    assert store.search.scope_size(scope) == 11
