"""`loci.integrations.langgraph.LociStore` against a real `loci serve`: a compiled LangGraph graph that
writes and reads memories through it (sync and async), LangGraph's store behaviour side by side with its
reference `InMemoryStore` (LangGraph ships no store conformance suite), and the Loci side of the mapping."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import httpx
import msgspec
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, PutOp, SearchItem, SearchOp
from langgraph.store.memory import InMemoryStore

from loci.client import APIError, AsyncLociClient, LociClient, MemoryCreate, PruneRequest, RecallRequest
from loci.integrations.langgraph import LociStore
from loci.integrations.langgraph.scope import MAX_DEPTH, draft_of, namespace_of
from loci.wire.models import MAX_TEXT_LENGTH
from loci.wire.options import Policy
from loci.wire.writes import MAX_BATCH, MAX_BODY_BYTES
from tests.integrations.conftest import LiveServer

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _loci_store(live: LiveServer) -> LociStore:
    return LociStore(live.url, live.key, namespace=f"lg-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def loci_store(live: LiveServer) -> Iterator[LociStore]:
    with _loci_store(live) as store:
        yield store


@pytest.fixture(params=["in-memory", "loci"])
def store(request: pytest.FixtureRequest, live: LiveServer) -> Iterator[BaseStore]:
    """LangGraph's reference store and Loci's: every test using it must pass on both."""
    if request.param == "in-memory":
        yield InMemoryStore()
        return
    with _loci_store(live) as loci:
        yield loci


# --- a graph -----------------------------------------------------------------------------------------
class User(TypedDict):
    user_id: str


class Recorder(GenericFakeChatModel):
    """A scripted chat model that keeps the prompts it was given."""

    prompts: list[list[BaseMessage]] = []

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.prompts.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def _namespace(runtime: Runtime[User]) -> tuple[str, ...]:
    return ("memories", runtime.context["user_id"])


def _prompt(known: list[SearchItem], state: MessagesState) -> list[BaseMessage]:
    return [
        SystemMessage("Known about the user: " + "; ".join(i.value["text"] for i in known)),
        *state["messages"],
    ]


def memory_graph(model: Recorder, store: BaseStore) -> Any:
    """Each turn: recall the user's memories for the message, answer with them in the system prompt, and
    remember the message (the usual LangGraph long-term-memory loop)."""

    def turn(state: MessagesState, runtime: Runtime[User]) -> dict[str, Any]:
        assert runtime.store is not None
        said = str(state["messages"][-1].content)
        known = runtime.store.search(_namespace(runtime), query=said, limit=2)
        reply = model.invoke(_prompt(known, state))
        runtime.store.put(_namespace(runtime), uuid.uuid4().hex, {"text": said})
        return {"messages": [reply]}

    builder = StateGraph(MessagesState, context_schema=User)
    builder.add_node("turn", turn)
    builder.add_edge(START, "turn")
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def async_memory_graph(model: Recorder, store: BaseStore) -> Any:
    """The same loop as an async node: the store is read and written through `abatch`."""

    async def turn(state: MessagesState, runtime: Runtime[User]) -> dict[str, Any]:
        assert runtime.store is not None
        said = str(state["messages"][-1].content)
        known = await runtime.store.asearch(_namespace(runtime), query=said, limit=2)
        reply = await model.ainvoke(_prompt(known, state))
        await runtime.store.aput(_namespace(runtime), uuid.uuid4().hex, {"text": said})
        return {"messages": [reply]}

    builder = StateGraph(MessagesState, context_schema=User)
    builder.add_node("turn", turn)
    builder.add_edge(START, "turn")
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def _replies(*texts: str) -> Recorder:
    return Recorder(messages=iter([AIMessage(t) for t in texts]), prompts=[])


def test_a_graph_remembers_across_threads_through_loci(loci_store: LociStore, live: LiveServer) -> None:
    model = _replies("Noted.", "Noted.", "You drink green tea.")
    graph = memory_graph(model, loci_store)
    alice = User(user_id="alice")
    graph.invoke(
        {"messages": [("user", "I drink green tea every morning")]},
        {"configurable": {"thread_id": "1"}},
        context=alice,
    )
    graph.invoke(
        {"messages": [("user", "My cat is called Miso")]}, {"configurable": {"thread_id": "2"}}, context=alice
    )
    out = graph.invoke(
        {"messages": [("user", "Which tea do I drink?")]}, {"configurable": {"thread_id": "3"}}, context=alice
    )
    assert out["messages"][-1].content == "You drink green tea."
    system = str(model.prompts[-1][0].content)
    assert system.startswith("Known about the user: I drink green tea every morning")  # ranked first
    assert len(model.prompts[-1]) == 2  # a new thread: only the memory store carried the tea

    # the memories are Loci memories: notes of entity "memories.alice" in the store's namespace
    with LociClient(live.url, live.key) as client:
        stored = list(client.iter_memories(namespace=loci_store.config.namespace, entity_id="memories.alice"))
    assert sorted(m.text for m in stored) == [
        '{"text": "I drink green tea every morning"}',
        '{"text": "My cat is called Miso"}',
        '{"text": "Which tea do I drink?"}',
    ]
    assert {m.type for m in stored} == {"note"}
    assert loci_store.list_namespaces() == [("memories", "alice")]


def test_a_graph_runs_async_on_abatch(loci_store: LociStore, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _replies("Noted.", "Berlin.")
    graph = async_memory_graph(model, loci_store)
    bob = User(user_id="bob")

    def no_sync(*args: Any) -> Any:
        raise AssertionError("the async graph used the sync client")

    monkeypatch.setattr(loci_store, "batch", no_sync)

    async def run() -> Any:
        await graph.ainvoke(
            {"messages": [("user", "I live in Berlin")]}, {"configurable": {"thread_id": "a"}}, context=bob
        )
        return await graph.ainvoke(
            {"messages": [("user", "Where do I live?")]}, {"configurable": {"thread_id": "b"}}, context=bob
        )

    out = asyncio.run(run())
    monkeypatch.undo()
    assert out["messages"][-1].content == "Berlin."
    assert "I live in Berlin" in str(model.prompts[-1][0].content)
    assert [i.value for i in loci_store.search(("memories", "bob"))] == [
        {"text": "Where do I live?"},
        {"text": "I live in Berlin"},
    ]


def test_readme_example_runs(live: LiveServer) -> None:
    example = ROOT / "docs" / "examples" / "langgraph_store.py"
    env = {**os.environ, "LOCI_URL": live.url, "LOCI_API_KEY": live.key}
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "I recall: I drink green tea every morning" in done.stdout


# --- LangGraph's store behaviour, on the reference store and on Loci ---------------------------------
def test_put_get_update_delete(store: BaseStore) -> None:
    ns = ("docs", "user1")
    assert store.get(ns, "a") is None
    store.put(ns, "a", {"text": "first", "n": 1, "tags": ["x", "y"], "nested": {"k": None}})
    item = store.get(ns, "a")
    assert item is not None and item.key == "a" and item.namespace == ns
    assert item.value == {"text": "first", "n": 1, "tags": ["x", "y"], "nested": {"k": None}}
    store.put(ns, "a", {"text": "second"})
    again = store.get(ns, "a")
    assert again is not None and again.value == {"text": "second"} and again.updated_at >= item.updated_at
    assert store.get(("docs",), "a") is None and store.get(ns, "b") is None
    store.delete(ns, "a")
    assert store.get(ns, "a") is None
    store.delete(ns, "never-there")


def test_namespace_rules(store: BaseStore) -> None:
    for bad in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"v": 1})
    for bad in [("a.b",), ("x", "")]:
        with pytest.raises(InvalidNamespaceError):
            store.get(bad, "k")
        with pytest.raises(InvalidNamespaceError):
            store.search(bad)
    store.put(("foo", "langgraph", "foo"), "bar", {"v": 1})  # "langgraph" is reserved as the root only
    assert store.search(("foo", "langgraph"))[0].value == {"v": 1}


def test_search_by_prefix_filter_offset_and_limit(store: BaseStore) -> None:
    rows = {
        ("docs", "a"): [("d1", {"kind": "report", "score": 4.5, "meta": {"lang": "en"}})],
        ("docs", "b"): [("d2", {"kind": "memo", "score": 2.0, "meta": {"lang": "de"}})],
        ("docs", "b", "drafts"): [("d3", {"kind": "report", "score": 3.0, "tags": ["a", "b"]})],
        ("mail",): [("m1", {"kind": "report", "score": 5.0})],
    }
    for ns, items in rows.items():
        for key, value in items:
            store.put(ns, key, value)

    def keys(*args: Any, **kwargs: Any) -> list[str]:
        return sorted(i.key for i in store.search(*args, **kwargs))

    assert keys(()) == ["d1", "d2", "d3", "m1"]
    assert keys(("docs",)) == ["d1", "d2", "d3"]
    assert keys(("docs", "b")) == ["d2", "d3"]
    assert keys(("docs", "b", "drafts")) == ["d3"]
    assert keys(("nothing",)) == []
    assert keys(("docs",), filter={"kind": "report"}) == ["d1", "d3"]
    assert keys((), filter={"score": {"$gt": 3.0}}) == ["d1", "m1"]
    assert keys((), filter={"score": {"$gte": 3.0, "$lt": 5.0}}) == ["d1", "d3"]
    assert keys((), filter={"kind": {"$ne": "report"}}) == ["d2"]
    assert keys((), filter={"meta": {"lang": "de"}}) == ["d2"]
    assert keys((), filter={"tags": ["a", "b"]}) == ["d3"]
    assert keys((), filter={"kind": "report", "score": {"$lte": 4.5}}) == ["d1", "d3"]
    pages = [store.search((), limit=2, offset=o) for o in (0, 2, 4)]
    assert [len(p) for p in pages] == [2, 2, 0]
    assert sorted(i.key for p in pages for i in p) == ["d1", "d2", "d3", "m1"]
    assert all(i.score is None for p in pages for i in p)


def test_list_namespaces(store: BaseStore) -> None:
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for i, ns in enumerate(namespaces):
        store.put(ns, f"k{i}", {"i": i})
        store.put(ns, f"extra{i}", {"i": i})  # two items: a namespace is listed once
    assert store.list_namespaces() == sorted(namespaces)
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("*", "users")) == [("admin", "users", "789")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []


def test_a_batch_reads_before_it_writes_and_the_last_write_wins(store: BaseStore) -> None:
    ns = ("batch",)
    store.put(ns, "old", {"v": 0})
    results = store.batch(
        [
            PutOp(ns, "k", {"v": 1}),
            GetOp(ns, "k"),
            SearchOp(ns),
            PutOp(ns, "k", {"v": 2}),
            PutOp(ns, "old", None),
            GetOp(ns, "old"),
        ]
    )
    assert results[0] is None and results[1] is None and results[3] is None and results[4] is None
    assert [i.key for i in results[2]] == ["old"]  # type: ignore[union-attr]
    assert results[5] is not None and results[5].value == {"v": 0}  # type: ignore[union-attr]
    assert store.get(ns, "k").value == {"v": 2}  # type: ignore[union-attr]
    assert store.get(ns, "old") is None


def test_async_methods(store: BaseStore) -> None:
    async def run() -> None:
        await store.aput(("x", "y"), "k", {"text": "hello"})
        assert (await store.aget(("x", "y"), "k")).value == {"text": "hello"}  # type: ignore[union-attr]
        assert [i.key for i in await store.asearch(("x",))] == ["k"]
        assert await store.alist_namespaces(prefix=("x",)) == [("x", "y")]
        await store.adelete(("x", "y"), "k")
        assert await store.aget(("x", "y"), "k") is None

    asyncio.run(run())


# --- what Loci adds, and its side of the mapping -----------------------------------------------------
def test_a_query_is_ranked_by_loci(loci_store: LociStore) -> None:
    ns = ("memories", "carol")
    texts = {
        "tea": "Carol drinks green tea at breakfast",
        "job": "Carol works as a nurse in Lisbon",
        "pet": "Carol has a dog named Pixel",
    }
    for key, text in texts.items():
        loci_store.put(ns, key, {"text": text})
    loci_store.put(("memories", "dave"), "tea", {"text": "Dave drinks green tea too"})
    found = loci_store.search(ns, query="which tea does Carol drink at breakfast")
    assert found[0].key == "tea" and found[0].namespace == ns
    assert found[0].score is not None and all(i.score is not None for i in found)
    assert [i.score for i in found] == sorted((i.score or 0.0 for i in found), reverse=True)
    assert {i.namespace for i in found} == {ns}  # scoped to the entity: dave's tea is not a candidate
    # a prefix spanning several namespaces ranks the Loci namespace and keeps what lies under the prefix
    both = loci_store.search(("memories",), query="green tea", limit=2)
    assert sorted(i.namespace[-1] for i in both) == ["carol", "dave"]
    assert (
        loci_store.search(("memories",), query="green tea", filter={"text": "Dave drinks green tea too"})[
            0
        ].key
        == "tea"
    )
    assert [i.key for i in loci_store.search(ns, query="nurse Lisbon", limit=1, offset=0)] == ["job"]


def test_a_query_on_one_namespace_is_not_crowded_out_by_others(loci_store: LociStore) -> None:
    """Recall ranks at most 100 candidates per channel: scoped to the namespace's entity, another user's
    better matches cannot take them all."""
    loci_store.batch([PutOp(("memories", "frank"), f"t{i}", {"text": "green tea"}) for i in range(120)])
    loci_store.put(("memories", "gina"), "tea", {"text": "Gina sometimes drinks green tea with lemon"})
    assert [i.key for i in loci_store.search(("memories", "gina"), query="green tea")] == ["tea"]
    assert len(loci_store.search(("memories",), query="green tea", limit=100)) == 100


def test_a_query_longer_than_the_api_takes_is_cut_to_it(loci_store: LociStore) -> None:
    """Recall takes queries of at most MAX_TEXT_LENGTH characters (a longer one was a 400 the store raised):
    the store ranks by the query's start."""
    ns = ("memories", "hana")
    loci_store.put(ns, "tea", {"text": "Hana drinks green tea"})
    loci_store.put(ns, "job", {"text": "Hana repairs bicycles"})
    query = "green tea " + "\U0001f375" * MAX_TEXT_LENGTH
    assert [i.key for i in loci_store.search(ns, query=query, limit=1)] == ["tea"]
    assert [i.key for i in asyncio.run(loci_store.asearch(ns, query=query, limit=1))] == ["tea"]


def test_a_query_returns_the_stored_values_unredacted(loci_store: LociStore) -> None:
    """Recall redacts personal data by default; a query's items are the values as stored (BaseStore's
    contract), whatever they hold, in their keys and namespace labels too."""
    ns, phone = ("users", "ann"), ("users", "+1 415 555 0100")
    loci_store.put(ns, "pref", {"text": "tea, and email me at ann@example.com"})
    loci_store.put(ns, "ann@example.com", {"text": "likes tea", "email": "ann@example.com"})
    loci_store.put(phone, "k", {"text": "likes tea"})
    found = {i.key: i.value for i in loci_store.search(ns, query="tea email")}
    assert found == {
        "pref": {"text": "tea, and email me at ann@example.com"},
        "ann@example.com": {"text": "likes tea", "email": "ann@example.com"},
    }
    assert [i.key for i in loci_store.search(phone, query="tea")] == ["k"]
    wanted = {"email": "ann@example.com"}
    assert [i.key for i in loci_store.search(ns, query="tea", filter=wanted)] == ["ann@example.com"]
    found_async = asyncio.run(loci_store.asearch(("users",), query="tea email", limit=5))
    assert {(i.namespace, i.key) for i in found_async} == {
        (ns, "pref"),
        (ns, "ann@example.com"),
        (phone, "k"),
    }


class Counting(httpx.HTTPTransport):
    """A transport that keeps the path of every request it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return super().handle_request(request)


class AsyncCounting(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return await super().handle_async_request(request)


def test_a_query_is_not_crowded_out_by_the_entitys_other_memories(live: LiveServer) -> None:
    """The namespace's entity may hold other memories (assemble's turns and facts): they take recall's
    places and are no items, so the search asks again for as many as the API allows."""
    sync, asynchronous = Counting(), AsyncCounting()
    store = LociStore(
        namespace=f"lg-{uuid.uuid4().hex[:12]}",
        client=LociClient(live.url, live.key, transport=sync),
        async_client=AsyncLociClient(live.url, live.key, transport=asynchronous),
    )
    ns = ("memories", "bob")
    with store:
        for i in range(5):
            store.put(ns, f"k{i}", {"text": f"coffee note {i}"})
        sync.paths.clear()
        assert len(store.search(ns, query="coffee", limit=3)) == 3
        assert sync.paths.count("/v0/recall") == 1  # only items in the entity: one recall
        store.client.create_memories(
            [
                MemoryCreate(
                    namespace=store.config.namespace,
                    entity_id="memories.bob",
                    type="event",
                    text=f"coffee, coffee and more coffee at cafe {i}",
                )
                for i in range(8)
            ]
        )
        sync.paths.clear()
        found = store.search(ns, query="coffee", limit=3)
        assert len(found) == 3 and {i.namespace for i in found} == {ns}
        assert sync.paths.count("/v0/recall") == 2
        assert (
            len(store.search(ns, query="coffee", limit=3, offset=3)) == 2
        )  # recall exhausted: what there is
        found_async = asyncio.run(store.asearch(ns, query="coffee", limit=4))
        assert len(found_async) == 4 and asynchronous.paths.count("/v0/recall") == 2


def test_index_controls_what_a_query_sees(live: LiveServer) -> None:
    with LociStore(
        live.url, live.key, namespace=f"lg-{uuid.uuid4().hex[:12]}", index_fields=["title"]
    ) as store:
        ns = ("notes",)
        store.put(ns, "hidden", {"title": "quarterly budget"}, index=False)
        store.put(ns, "body", {"title": "misc", "body": "quarterly budget"}, index=["body"])
        store.put(ns, "title", {"title": "quarterly budget review"})
        store.put(ns, "untitled", {"body": "quarterly budget"})  # no indexed field: not ranked
        ranked = {i.key for i in store.search(ns, query="quarterly budget")}
        assert ranked == {"body", "title"}
        assert {i.key for i in store.search(ns)} == {"hidden", "body", "title", "untitled"}
        assert store.get(ns, "hidden").value == {"title": "quarterly budget"}  # type: ignore[union-attr]


def test_an_item_whose_indexed_fields_are_blank_is_stored_unindexed(loci_store: LociStore) -> None:
    """Blank indexed text is refused by the API (a put raised): the item is stored unindexed instead."""
    ns = ("notes",)
    loci_store.put(ns, "empty", {"title": "", "body": "quarterly budget"}, index=["title"])
    loci_store.put(ns, "spaces", {"title": " \n\t", "body": "quarterly budget"}, index=["title"])
    loci_store.put(ns, "two", {"title": "", "tag": ""}, index=["title", "tag"])
    asyncio.run(loci_store.aput(ns, "async", {"title": "  "}, index=["title"]))
    loci_store.put(ns, "ranked", {"title": "quarterly budget"}, index=["title"])
    spaces = loci_store.get(ns, "spaces")
    assert spaces is not None and spaces.value == {"title": " \n\t", "body": "quarterly budget"}
    assert {i.key for i in loci_store.search(ns, filter={"body": "quarterly budget"})} == {"empty", "spaces"}
    assert {i.key for i in loci_store.search(ns)} == {"empty", "spaces", "two", "async", "ranked"}
    assert [i.key for i in loci_store.search(ns, query="quarterly budget")] == ["ranked"]


def test_a_batch_larger_than_one_request_is_written_in_several(live: LiveServer) -> None:
    """Puts whose memories outgrow the server's body limit (each keeps its value whole) were one POST the
    server refused (413), and more than MAX_BATCH puts must be split too: both go in as many as needed."""
    sync, asynchronous = Counting(), AsyncCounting()
    with LociStore(
        namespace=f"lg-{uuid.uuid4().hex[:12]}",
        index_fields=["text"],
        client=LociClient(live.url, live.key, transport=sync),
        async_client=AsyncLociClient(live.url, live.key, transport=asynchronous),
    ) as store:
        big = [PutOp(("big",), f"k{i:03}", {"text": f"note {i}", "blob": "x" * 100_000}) for i in range(110)]
        assert store.batch(big) == [None] * 110
        assert sync.paths.count("/v0/memories") == 110 + 2  # a list per put, then two creates
        many = [PutOp(("many",), f"k{i:03}", {"text": f"note {i}"}) for i in range(MAX_BATCH * 2 + 50)]
        assert asyncio.run(store.abatch(many)) == [None] * len(many)
        assert store.get(("big",), "k109").value["blob"] == "x" * 100_000  # type: ignore[union-attr]
        assert sorted(i.key for i in store.search(("big",), limit=200)) == [op.key for op in big]
        assert sorted(i.key for i in store.search(("many",), limit=500)) == [op.key for op in many]


def test_a_batch_whose_write_fails_changes_nothing(loci_store: LociStore) -> None:
    """A batch written in several requests whose later one failed (a value alone over the server's body
    limit: 413) raised, yet kept the earlier requests' new values, and the versions they replaced too."""
    ns = ("u",)
    loci_store.put(ns, "a", {"text": "old a"})
    puts = [PutOp(ns, "a", {"text": "new a"}), PutOp(ns, "b", {"text": "x" * MAX_BODY_BYTES})]

    def sync() -> object:
        return loci_store.batch(puts)

    def asynchronous() -> object:
        return asyncio.run(loci_store.abatch(puts))

    for run in (sync, asynchronous):
        with pytest.raises(APIError) as failed:
            run()
        assert failed.value.status == 413
        assert [(i.key, i.value) for i in loci_store.search(ns)] == [("a", {"text": "old a"})]
        mine = loci_store.client.list_memories(namespace=loci_store.config.namespace)
        assert len(mine.items) == 1  # the one version of "a"


def test_unindexed_items_outlive_a_prune_of_archived_memories(live: LiveServer) -> None:
    """Items put with index=False, or without an indexed field, are live memories: an operator's prune of
    archived (retired) memories, in the store's Loci namespace, leaves them. They were stored archived
    and that prune deleted them."""
    with (
        LociStore(
            live.url, live.key, namespace=f"lg-{uuid.uuid4().hex[:12]}", index_fields=["text"]
        ) as store,
        LociClient(live.url, live.key) as client,
    ):
        ns, loci_ns = ("prefs", "alice"), store.config.namespace
        store.put(ns, "theme", {"color": "dark"})  # no "text": no indexed field
        store.put(ns, "secret", {"text": "the vault code is 4711"}, index=False)
        store.put(ns, "bio", {"text": "Alice flies a vintage plane"})
        pruned = client.prune(PruneRequest(namespace=loci_ns, archived=True, dry_run=False))
        assert store.get(ns, "theme").value == {"color": "dark"}  # type: ignore[union-attr]
        assert store.get(ns, "secret").value == {"text": "the vault code is 4711"}  # type: ignore[union-attr]
        assert pruned.count == 0 and client.list_memories(namespace=loci_ns, archived=True).items == []
        assert {i.key for i in store.search(ns)} == {"theme", "secret", "bio"}
        assert [i.key for i in store.search(ns, query="vault code plane dark")] == ["bio"]
        assert [i.key for i in store.search(("prefs",), query="vault code plane dark")] == ["bio"]
        # Loci's own recall (and assemble) of the entity sees them: ordinary live memories
        recall = client.recall(
            RecallRequest(
                query="vault code",
                namespace=loci_ns,
                entity_id="prefs.alice",
                policy=Policy(pii_redaction="off"),
            )
        )
        keys = [m.metadata["langgraph"]["key"] for m in recall.matches]
        assert keys[0] == "secret" and set(keys) == {"theme", "secret", "bio"}


def test_items_an_earlier_version_stored_archived_still_work(live: LiveServer) -> None:
    """Earlier versions stored unindexed items archived: they are still read by key, listed, searched
    without a query and updated (the update is stored live); a query still leaves them out."""
    with (
        LociStore(
            live.url, live.key, namespace=f"lg-{uuid.uuid4().hex[:12]}", index_fields=["text"]
        ) as store,
        LociClient(live.url, live.key) as client,
    ):
        ns, now = ("prefs", "bob"), datetime.now(UTC)
        old = [
            draft_of(
                ns, key, value, loci_namespace=store.config.namespace, fields=["$"], created_at=now, now=now
            )
            for key, value in (("theme", {"color": "light"}), ("tea", {"text": "Bob likes tea"}))
        ]
        client.create_memories([msgspec.structs.replace(d, archived=True) for d in old])
        store.put(ns, "bio", {"text": "Bob likes tea and biscuits"})
        assert store.get(ns, "theme").value == {"color": "light"}  # type: ignore[union-attr]
        assert {i.key for i in store.search(ns)} == {"theme", "tea", "bio"}
        assert [i.key for i in store.search(ns, query="tea")] == ["bio"]
        store.put(ns, "theme", {"color": "dark"})
        store.put(ns, "tea", {"text": "Bob likes green tea"})
        assert store.get(ns, "theme").value == {"color": "dark"}  # type: ignore[union-attr]
        assert store.get(ns, "theme").created_at == now  # type: ignore[union-attr]
        assert {i.key for i in store.search(ns, query="tea")} == {"tea", "bio"}
        stored = list(client.iter_memories(namespace=store.config.namespace))
        assert len(stored) == 3 and not any(m.archived for m in stored)


def test_an_update_keeps_created_at_and_one_memory(loci_store: LociStore, live: LiveServer) -> None:
    ns = ("profile", "erin")
    loci_store.put(ns, "city", {"text": "Erin lives in Oslo"})
    first = loci_store.get(ns, "city")
    loci_store.put(ns, "city", {"text": "Erin lives in Bergen"})
    second = loci_store.get(ns, "city")
    assert first is not None and second is not None
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    with LociClient(live.url, live.key) as client:
        memories = list(client.iter_memories(namespace=loci_store.config.namespace))
    assert [m.text for m in memories] == ['{"text": "Erin lives in Bergen"}']
    assert memories[0].entity_id == "profile.erin" and namespace_of("profile.erin") == ns
    assert "langgraph" in memories[0].tags and "lg-key:city" in memories[0].tags


def test_long_namespaces_and_keys_round_trip(loci_store: LociStore) -> None:
    deep = tuple(f"level{i}" for i in range(MAX_DEPTH))
    long_key = "k" * 300
    wide = ("w" * 100, "x" * 100)
    loci_store.put(deep, long_key, {"v": 1})
    loci_store.put(wide, long_key, {"v": 2})
    loci_store.put(wide, "other", {"v": 3})
    assert loci_store.get(deep, long_key).value == {"v": 1}  # type: ignore[union-attr]
    assert loci_store.get(wide, long_key).value == {"v": 2}  # type: ignore[union-attr]
    assert loci_store.list_namespaces(prefix=deep[:3], max_depth=4) == [deep[:4]]
    assert sorted(i.key for i in loci_store.search(wide[:1])) == [long_key, "other"]
    with pytest.raises(InvalidNamespaceError):
        loci_store.put((*deep, "one-more"), "k", {"v": 0})
    with pytest.raises(InvalidNamespaceError):
        loci_store.put(("y" * 200, "z" * 60), "k", {"v": 0})
    assert loci_store.get(("y" * 200, "z" * 60), "k") is None


def test_a_namespace_that_joins_to_a_blank_entity_is_refused_as_a_too_long_one_is(
    loci_store: LociStore,
) -> None:
    """(" ",) is a namespace LangGraph takes, but its entity is blank, which the API refuses: a put raised the
    API's 422 about an `entity_id`, and so did a get and a query, reads of what cannot be there."""
    for blank in [(" ",), ("\u200b",)]:
        with pytest.raises(InvalidNamespaceError, match="blank"):
            loci_store.put(blank, "k", {"v": 1})
        assert loci_store.get(blank, "k") is None
        assert loci_store.search(blank, query="anything") == []
        assert loci_store.search(blank) == []
        assert loci_store.list_namespaces(prefix=blank) == []


def test_dates_and_uuids_are_stored_as_strings(loci_store: LociStore) -> None:
    """A value holding a datetime or a UUID raised TypeError (and a batch wrote nothing); LangGraph's
    PostgreSQL store keeps them as ISO strings."""
    when, ident = datetime(2024, 1, 1, 9, 30, tzinfo=UTC), uuid.UUID(int=7)
    loci_store.put(("d",), "k", {"text": "x", "when": when, "day": when.date(), "id": ident})
    item = loci_store.get(("d",), "k")
    assert item is not None
    assert item.value == {"text": "x", "when": "2024-01-01T09:30:00Z", "day": "2024-01-01", "id": str(ident)}


def test_ttl_is_refused(loci_store: LociStore) -> None:
    with pytest.raises(NotImplementedError):
        loci_store.put(("t",), "k", {"v": 1}, ttl=5)
    with pytest.raises(NotImplementedError):
        loci_store.batch([PutOp(("t",), "k", {"v": 1}, ttl=5)])
    assert loci_store.get(("t",), "k") is None
