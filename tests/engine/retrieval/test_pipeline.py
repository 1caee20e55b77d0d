from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from datetime import timedelta
from typing import Any

import msgspec
import pytest

from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.errors import Unavailable
from engine.retrieval.budget import context_tokens
from engine.retrieval.channels import semantic_query
from engine.retrieval.options import AssembleRequest, RecallRequest
from engine.retrieval.pipeline import assemble, recall, run_assemble
from engine.retrieval.redaction_hook import NoRedaction
from engine.retrieval.responses import AssembleResponse, Redaction
from engine.retrieval.tokens import get_tokenizer
from engine.storage.base import Scope, Store, Vector

from .conftest import FailingEmbedder
from .helpers import NOW, mem


def req(**body: Any) -> AssembleRequest:
    return msgspec.convert(
        {"entity_id": "ent:alice", "turn": "What does Alice like? green tea", **body}, AssembleRequest
    )


def run(store: Store, cache: EmbeddingCache | None, **body: Any) -> AssembleResponse:
    return assemble(
        store, cache, org_id="o1", agent_id=None, request=req(**body), request_id="req_1", now=NOW
    )


def early_fetch(store: Store) -> int:
    """The store call a request makes while its query embeds on a pool thread (a database server's
    store), whatever the thread's speed; none when the vector is held or computed in line."""
    return 1 if store.search.capabilities.server_side else 0


def all_lines(resp: AssembleResponse) -> str:
    c = resp.context
    return "\n".join([*c.facts, *c.recent_events, *c.sources, c.summary])


def test_basic_shape(store: Store, cache: EmbeddingCache) -> None:
    resp = run(store, cache)
    enc = msgspec.json.decode(msgspec.json.encode(resp))
    assert {
        "context",
        "trace",
        "extracted",
        "retrieval_summary",
        "flags",
        "cost",
        "redaction",
        "request_id",
    } <= set(enc)
    assert "matches" not in enc and "raw_memories" not in enc and "facts_struct" not in enc["context"]
    assert enc["request_id"] == "req_1"
    assert enc["extracted"] == {
        "entities": [],
        "facts": [],
        "upserts": [],
        "truncated": False,
        "facts_left_out": 0,
    }
    assert enc["redaction"] == {"applied": False, "rules": []}
    assert enc["trace"]["summary"]["origin"] == "extractive"
    budget = enc["trace"]["budget"]
    assert budget["origin"] == "default" and budget["tokenizer"] == "o200k_base"
    assert budget["method"].startswith("o200k_base BPE tokens of each rendered line")
    c = resp.context
    lines = [line for line in (c.summary, *c.facts, *c.recent_events, *c.sources) if line]
    chars = sum(len(line) + 1 for line in lines)
    assert budget["chars_per_token"] == round(chars / resp.context.token_counts.used, 2)
    assert "timings" not in enc["trace"]
    assert "Alice likes green tea" in resp.context.facts
    assert not resp.flags.degraded and not resp.flags.weights_renormalized
    s = resp.retrieval_summary
    assert s.normalization == "minmax" and s.depth == 2 and s.preset == "balanced"
    assert s.candidate_counts.semantic > 0 and s.candidate_counts.bm25 > 0
    # "Alice" is the scope's own entity: no graph seed, the graph channel is skipped
    assert s.candidate_counts.graph == 0
    # 2 channels + the newest events (recency has weight) + get_memories + the events next to the best
    # ones (conversation context), and on a database server the early fetch while the query embeds
    assert resp.cost.embedding == 1 and resp.cost.retrieval_ops == 5 + early_fetch(store)
    assert resp.cost.input_tokens == get_tokenizer("o200k_base").count(req().turn)
    acme = run(store, cache, turn="Where is Acme?")
    assert acme.retrieval_summary.candidate_counts.graph > 0
    assert acme.cost.retrieval_ops == 6 + early_fetch(store)
    again = run(store, cache, turn="Where is Acme?")
    assert again.cost.embedding == 0 and again.cost.retrieval_ops == 6


def test_scope_rules(store: Store, cache: EmbeddingCache) -> None:
    resp = run(store, cache, **{"return": {"include_raw_matches": True}})
    text = all_lines(resp)
    ids = {m.memory_id for m in resp.matches}  # type: ignore[union-attr]
    assert "m_london" not in ids and "London" not in text  # superseded never without as_of
    assert not ids & {"x_archived", "x_bob", "x_other_org"}


def test_as_of_shows_what_was_true_then(store: Store, cache: EmbeddingCache) -> None:
    as_of = (NOW - timedelta(days=60)).isoformat()
    resp = run(store, cache, turn="Where does Alice live?", as_of=as_of)
    assert any("Alice lives in London" in f for f in resp.context.facts)
    assert not any("Paris" in f for f in resp.context.facts)
    # London ended when Paris began, after as_of: what was true then shows no end
    assert "Alice lives in London (since 2024-11-27)" in resp.context.facts
    # events after as_of are not candidates
    assert not any("dentist" in e for e in resp.context.recent_events)


def test_matches_components_sum_and_reasons(store: Store, cache: EmbeddingCache) -> None:
    resp = run(
        store,
        cache,
        **{"return": {"include_raw_matches": True}},
        retrieval={"predicate_boosts": {"likes": 0.2}, "entity_boosts": ["ent:acme"]},
    )
    assert resp.matches
    scores = [m.score for m in resp.matches]
    for m in resp.matches:
        assert sum(c.contrib for c in m.score_components.values()) == m.score
        assert m.reason
    assert any("predicate_boost" in m.score_components for m in resp.matches)
    assert any("entity_boost" in m.score_components for m in resp.matches)
    assert len(scores) <= 24


def test_optional_parts(store: Store, cache: EmbeddingCache) -> None:
    resp = run(
        store,
        cache,
        turn="Does Alice still work at Acme?",
        **{
            "return": {
                "include_raw_memories": True,
                "include_structured_facts": True,
                "include_scores": True,
                "trace": True,
            }
        },
    )
    assert resp.raw_memories and all(m.org_id == "o1" for m in resp.raw_memories)
    fs = resp.context.facts_struct
    assert fs and all(f.type in ("fact", "profile") and f.score is not None for f in fs)
    paris = (
        next(f for f in fs if f.memory_id == "m_paris") if any(f.memory_id == "m_paris" for f in fs) else None
    )
    if paris is not None:
        assert paris.object_text == "Paris" and paris.predicate == "lives_in"
    assert resp.trace.timings and resp.trace.timings.total > 0
    assert resp.trace.debug and resp.trace.debug.graph_seeds == ["ent:acme"]


def test_include_controls_sections(store: Store, cache: EmbeddingCache) -> None:
    resp = run(store, cache, **{"return": {"include": ["recent_events"]}})
    c = resp.context
    assert c.facts == [] and c.sources == [] and c.summary == "" and c.recent_events


def test_events_newest_first_and_max_events(store: Store, cache: EmbeddingCache) -> None:
    resp = run(
        store,
        cache,
        turn="Alice trip conference dentist cat",
        **{"return": {"max_events": 2, "max_facts": 1}},
    )
    ev = resp.context.recent_events
    headers = [line for line in ev if re.fullmatch(r"\d{4}-\d{2}-\d{2} \(\w+\):", line)]
    assert len(headers) >= 1 and len(ev) - len(headers) <= 2  # one header line per day, then its events
    assert headers == sorted(headers, reverse=True) and ev[0] == headers[0]  # newest day first
    assert len(resp.context.facts) <= 1
    limits = [a for a in resp.context.budget_actions if a.action == "limit"]
    # one action per section held back, naming how many candidates, no memory
    assert 1 <= len(limits) <= 2 and all(a.memory_id is None for a in limits)
    assert all(re.match(r"\d+ candidates past return\.max_(facts|events)=\d", a.notes or "") for a in limits)


def test_must_include_and_seeds(store: Store, cache: EmbeddingCache) -> None:
    resp = run(
        store,
        cache,
        turn="unrelated words",
        must_include=["e_old", "x_other_org", "m_london"],
        seed_context={"memory_ids": ["d_doc"], "snippets": ["The user prefers short answers."]},
        **{"return": {"include_raw_matches": True}},
    )
    lines = all_lines(resp)
    assert "Alice adopted a cat named Tom" in lines  # pinned
    assert "in another org" not in lines and "London" not in lines  # not in scope: ignored
    assert "[snippet:1] The user prefers short answers." in resp.context.sources
    assert any(s.startswith("[d_doc]") for s in resp.context.sources)
    reasons = {m.memory_id: m.reason for m in resp.matches or []}
    assert "must_include (pinned)" in reasons["e_old"]
    assert "seed_context memory" in reasons["d_doc"]


def test_diversity_counts(store: Store, cache: EmbeddingCache) -> None:
    resp = run(store, cache, turn="What does Alice like", retrieval={"diversity": {"max_per_predicate": 1}})
    assert resp.retrieval_summary.diversity_actions.clamped_by_predicate >= 2
    likes = [f for f in resp.context.facts if " likes " in f]
    assert len(likes) == 1
    off = run(
        store,
        cache,
        turn="What does Alice like",
        retrieval={"diversity": {"enable": False, "max_per_predicate": 1}},
    )
    assert off.retrieval_summary.diversity_actions.clamped_by_predicate == 0


def test_degraded_embedder(store: Store) -> None:
    failing = EmbeddingCache(FailingEmbedder(), store)
    resp = run(store, failing)
    assert resp.flags.degraded and resp.retrieval_summary.degraded
    w = resp.retrieval_summary.weights_used
    assert w.semantic == 0.0 and w.total() == pytest.approx(1.0)
    assert resp.retrieval_summary.candidate_counts.semantic == 0
    assert resp.context.facts  # still answers
    none = run(store, None)
    assert none.flags.degraded


def test_weights_renormalized_flag(store: Store, cache: EmbeddingCache) -> None:
    resp = run(
        store,
        cache,
        retrieval={
            "weights": {"semantic": 1, "bm25": 1, "graph_prior": 0, "recency_decay": 0, "confidence": 0}
        },
    )
    assert resp.flags.weights_renormalized
    assert resp.retrieval_summary.weights_used.semantic == 0.5


def test_presets_change_what_runs(store: Store, cache: EmbeddingCache) -> None:
    fast = run(store, cache, retrieval={"preset": "fast"})
    assert fast.retrieval_summary.depth == 0 and fast.retrieval_summary.candidate_counts.graph == 0
    assert fast.cost.retrieval_ops == 5 + early_fetch(store)  # no graph channel
    graphy = run(store, cache, retrieval={"preset": "graphy", "weights": {"semantic": 0.5}})
    assert graphy.retrieval_summary.preset == "graphy" and graphy.flags.weights_renormalized


@pytest.mark.parametrize("normalization", ["minmax", "zscore", "softmax"])
def test_normalizations_run(store: Store, cache: EmbeddingCache, normalization: str) -> None:
    resp = run(
        store, cache, retrieval={"normalization": normalization}, **{"return": {"include_raw_matches": True}}
    )
    assert resp.retrieval_summary.normalization == normalization
    assert all(sum(c.contrib for c in m.score_components.values()) == m.score for m in resp.matches or [])


def test_graph_depth_never_walks_through_the_request_s_own_entity(
    store: Store, cache: EmbeddingCache
) -> None:
    """Hop 0: the memories touching ent:acme. Hop 1 went through m_acme's other entity, ent:alice, the
    request's own, to every memory of the scope ("graph: 1 hop from a seed entity" on her tea)."""
    graph_only = {"graph_prior": 1, "semantic": 0, "bm25": 0, "recency_decay": 0, "confidence": 0}
    resp = run(
        store,
        cache,
        turn="Tell me about Acme",
        retrieval={"depth": 1, "weights": graph_only},
        **{"return": {"include_raw_matches": True}},
    )
    by_id = {m.memory_id: m for m in resp.matches or []}
    assert by_id["m_acme_hq"].score == by_id["m_acme"].score == 1.0
    assert "m_tea" not in by_id or (by_id["m_tea"].score == 0.0 and "graph" not in by_id["m_tea"].reason)
    assert resp.retrieval_summary.candidate_counts.graph == 2
    shallow = run(
        store,
        cache,
        turn="Tell me about Acme",
        retrieval={"depth": 0, "weights": graph_only},
        **{"return": {"include_raw_matches": True}},
    )
    assert {m.memory_id for m in shallow.matches or []} >= {"m_acme", "m_acme_hq"}
    assert shallow.retrieval_summary.candidate_counts.graph == 2


def test_rerank_runs(store: Store, cache: EmbeddingCache) -> None:
    plain = run(store, cache, **{"return": {"include_raw_matches": True}})
    rr = run(
        store, cache, retrieval={"rerank": {"enable": True}}, **{"return": {"include_raw_matches": True}}
    )
    # the second request finds the query's vector held: no early fetch, one read of the stored vectors
    assert plain.cost.embedding == 1 and rr.cost.embedding == 0
    assert rr.retrieval_summary.rerank
    assert rr.cost.retrieval_ops == plain.cost.retrieval_ops - early_fetch(store) + 1
    assert {m.memory_id for m in rr.matches or []} == {m.memory_id for m in plain.matches or []}


def test_rerank_lambda_one_keeps_the_fused_order(store: Store, cache: EmbeddingCache) -> None:
    ret = {"return": {"include_raw_matches": True}}
    plain = run(store, cache, **ret)
    pure = run(store, cache, retrieval={"rerank": {"enable": True, "lambda": 1.0}}, **ret)
    assert pure.retrieval_summary.rerank
    assert [m.memory_id for m in pure.matches or []] == [m.memory_id for m in plain.matches or []]


def test_budget_small_is_respected_and_recorded(store: Store, cache: EmbeddingCache) -> None:
    long_snips = ["word " * 780, "other " * 660]
    resp = run(store, cache, budget={"max_context_tokens": 256}, seed_context={"snippets": long_snips})
    c = resp.context
    assert context_tokens(c.facts, c.recent_events, c.summary, c.sources, get_tokenizer("o200k_base")) <= 256
    assert c.token_counts.budget == 256 and c.token_counts.used <= 256
    assert c.token_counts.dropped > 0 and resp.retrieval_summary.budget_cut_count
    assert any(a.action in ("drop", "truncate") for a in c.budget_actions)
    assert resp.trace.budget.origin == "budget.max_context_tokens"


def test_agent_scope(store: Store, cache: EmbeddingCache) -> None:
    resp = assemble(store, cache, org_id="o1", agent_id="agent-x", request=req(), request_id="r", now=NOW)
    assert resp.context.facts == [] and resp.context.sources == []


def test_run_assemble_returns_timings(store: Store, cache: EmbeddingCache) -> None:
    out = run_assemble(store, cache, org_id="o1", agent_id=None, request=req(), request_id="r", now=NOW)
    t = out.timings
    assert t.total >= t.embed and t.total >= t.channels and t.total > 0


def test_recall(store: Store, cache: EmbeddingCache) -> None:
    r = recall(
        store,
        cache,
        org_id="o1",
        agent_id=None,
        request=msgspec.convert(
            {
                "query": "green tea",
                "entity_id": "ent:alice",
                "limit": 3,
                "return": {"include_raw_memories": True},
            },
            RecallRequest,
        ),
        request_id="req_2",
        now=NOW,
    )
    assert 0 < len(r.matches) <= 3 and r.request_id == "req_2"
    assert r.matches[0].memory_id in ("m_tea", "n_recipe")
    assert [m.score for m in r.matches] == sorted((m.score for m in r.matches), reverse=True)
    assert r.raw_memories and len(r.raw_memories) == len(r.matches)
    whole = recall(
        store,
        cache,
        org_id="o1",
        agent_id=None,
        request=RecallRequest(query="green tea"),
        request_id="r",
        now=NOW,
    )
    assert "x_bob" in {m.memory_id for m in whole.matches}  # no entity: the whole namespace


class CityRedactor(NoRedaction):
    """A stand-in for engine.redact: replaces 'Paris' with a long placeholder."""

    def __init__(self) -> None:
        self.count = 0

    def redact(self, text: str, memory: object) -> str:
        if "Paris" in text:
            self.count += 1
            return text.replace("Paris", "[CITY_PLACEHOLDER_WITH_A_LONG_NAME_1]")
        return text

    def result(self) -> Redaction:
        return Redaction(applied=self.count > 0, rules=["city"] if self.count else [])


def test_redaction_hook_runs_before_budget(store: Store, cache: EmbeddingCache) -> None:
    request = req(
        turn="Where does Alice live? Paris",
        budget={"max_context_tokens": 256},
        **{"return": {"include_raw_matches": True, "include_structured_facts": True}},
    )
    resp = assemble(
        store,
        cache,
        org_id="o1",
        agent_id=None,
        request=request,
        request_id="r",
        now=NOW,
        redactor_factory=lambda policy: CityRedactor(),
    )
    text = all_lines(resp)
    assert "[CITY_PLACEHOLDER_WITH_A_LONG_NAME_1]" in text and "Paris" not in text
    assert resp.redaction.applied and resp.redaction.rules == ["city"]
    assert all("Paris" not in m.text for m in resp.matches or [])
    assert all("Paris" not in f.text and f.object_text != "Paris" for f in resp.context.facts_struct or [])
    c = resp.context
    assert context_tokens(c.facts, c.recent_events, c.summary, c.sources, get_tokenizer("o200k_base")) <= 256


def _beside(
    store: Store, cache: EmbeddingCache, channel: str, *, embedding_waits: bool, turn: str
) -> tuple[AssembleResponse, list[str]]:
    """`turn` run with the embedder and `store.search.<channel>` noting the order they start in; on a
    server-side backend one of them (the embedder when `embedding_waits`) waits until the other has
    started, and fails after 5 s: run one after the other, they would never overlap."""
    server = store.search.capabilities.server_side
    started = {"embedding": threading.Event(), channel: threading.Event()}
    order: list[str] = []
    inner = cache.embedder

    def starting(name: str, waits: bool) -> None:
        other = channel if name == "embedding" else "embedding"
        if server and waits and not started[other].wait(5.0):
            raise AssertionError(f"{other} did not start while {name} waited")
        started[name].set()
        order.append(name)

    class Embedder:
        model, dim = inner.model, inner.dim

        def embed(self, texts: Sequence[str]) -> Vector:
            starting("embedding", embedding_waits)
            return inner.embed(texts)

    original = getattr(store.search, channel)

    def search(*args: Any, **kwargs: Any) -> Any:
        starting(channel, not embedding_waits)
        return original(*args, **kwargs)

    setattr(store.search, channel, search)
    return run(store, EmbeddingCache(Embedder(), store), turn=turn), order


def test_the_query_embeds_beside_the_graph_channel_on_a_server_side_search(
    store: Store, cache: EmbeddingCache
) -> None:
    """On a search backend whose searches run in a database server (`Capabilities.server_side`) the
    query embeds while the graph channel runs: the embedder waits until it has started (run one after
    the other, this would time out and the answer would be degraded). In process it embeds first."""
    server = store.search.capabilities.server_side
    turn = "Does Bob like the same tea as Alice?"  # Bob seeds the graph channel
    resp, order = _beside(store, cache, "graph_search", embedding_waits=True, turn=turn)
    assert not resp.flags.degraded and resp.retrieval_summary.candidate_counts.semantic > 0
    assert "Alice likes green tea" in resp.context.facts
    assert order == (["graph_search", "embedding"] if server else ["embedding", "graph_search"])


def test_the_query_embeds_beside_the_keyword_channel_on_a_server_side_search(
    store: Store, cache: EmbeddingCache
) -> None:
    """On a database server the encoder starts before the keyword statement (which the speakers' names
    wait on): the keyword search here waits until the embedding has started. In process the index
    counts the speakers at once, so the embedding starts first there too."""
    turn = "Which tea does Alice drink, asked anew?"
    resp, order = _beside(store, cache, "keyword_search", embedding_waits=False, turn=turn)
    assert not resp.flags.degraded and resp.retrieval_summary.candidate_counts.semantic > 0
    assert order == ["embedding", "keyword_search"]


def test_a_pass_begun_by_the_embedder_runs_while_the_other_channels_do(store: Store) -> None:
    """An embedder that begins its own pass (`MiniLMEmbedder.begin`, on onnxruntime's thread) is asked
    for the vector only after the keyword and graph channels ran: here its pass ends inside the graph
    search, and a vector asked for earlier would wait the whole 5 s fallback and be late."""
    order: list[str] = []
    inner = HashEmbedder()
    finish = threading.Event()

    class Beginning:
        model, dim = inner.model, inner.dim

        def embed(self, texts: Sequence[str]) -> Any:
            order.append("embed")
            return inner.embed(texts)

        def begin(self, texts: Sequence[str]) -> Future[Any]:
            order.append("begin")
            rows: Future[Any] = Future()

            def compute() -> None:
                finish.wait(5.0)
                order.append("pass done" if finish.is_set() else "pass late")
                rows.set_result(inner.embed(texts))

            threading.Thread(target=compute, daemon=True).start()
            return rows

    for channel in ("keyword_search", "graph_search"):
        original = getattr(store.search, channel)

        def search(*args: Any, _channel: str = channel, _original: Any = original, **kwargs: Any) -> Any:
            order.append(_channel)
            if _channel == "graph_search":
                finish.set()
            return _original(*args, **kwargs)

        setattr(store.search, channel, search)
    resp = run(store, EmbeddingCache(Beginning(), store), turn="Does Bob like the same tea as Alice?")
    assert not resp.flags.degraded and resp.retrieval_summary.candidate_counts.semantic > 0
    assert order[:4] == ["begin", "keyword_search", "graph_search", "pass done"]
    assert "embed" not in order


class _Noting:
    """The hash embedder, noting the thread each call runs on and the texts of each call."""

    def __init__(self, fail: bool = False) -> None:
        self.inner = HashEmbedder()
        self.model, self.dim = self.inner.model, self.inner.dim
        self.threads: list[str] = []
        self.batches: list[list[str]] = []
        self.fail = fail

    def embed(self, texts: Sequence[str]) -> Any:
        self.threads.append(threading.current_thread().name)
        self.batches.append(list(texts))
        if self.fail:
            raise Unavailable("embedder down")
        return self.inner.embed(texts)


def test_a_scope_s_next_question_embeds_the_one_text_its_speakers_point_to(store: Store) -> None:
    """On a database server the encoder starts before the keyword statement has counted the speakers:
    a scope's first question of a name embeds the query as it is (no event here is Alice's, so that is
    the text); the next question of that name embeds only the text the last count pointed to.
    A wrong pointer (the speakers changed) costs one more embedding, never another context."""
    from engine.retrieval import retrieve

    server = store.search.capabilities.server_side
    noting = _Noting()
    cache = EmbeddingCache(noting, store)
    turn = "What tea does Alice drink these days?"
    first = run(store, cache, turn=turn)
    assert noting.batches == [[turn]]
    noting.batches.clear()
    second = run(store, cache, turn="Which tea does Alice like best?")
    assert [len(b) for b in noting.batches] == [1]
    assert not first.flags.degraded and not second.flags.degraded
    (pointed,) = noting.batches[0]
    noting.batches.clear()
    hints = retrieve._hints(store)
    scope = Scope(org_id="o1", namespace=req().namespace, entity_id="ent:alice", now=NOW)
    guessed = hints.guess(scope, ["Alice"])
    assert (guessed is not None) == server  # hints are kept only where they are read
    hints.record(scope, ["Alice"], set() if guessed else {"Alice"})  # now pointing the other way
    wrong = run(store, EmbeddingCache(noting, store), turn="Which tea does Alice like best?")
    assert all_lines(wrong) == all_lines(second)
    if server:
        assert len(noting.batches) == 2 and noting.batches[1] == [pointed] != noting.batches[0]
    else:
        assert noting.batches == [[pointed]]


def test_a_first_question_of_a_speaker_embeds_the_query_without_the_name(store: Store) -> None:
    """Without a hint a database server starts on the query as it is; when the keyword statement's
    counts show the name is the scope's speaker, the query without it embeds next and is the one
    used, as in process, where it is the only embedding."""
    server = store.search.capabilities.server_side
    lines = ["I drink oolong every morning", "I brew it for four minutes", "My kettle is new"]
    store.put_memories(
        [mem(f"e_said_{i}", f"Alice: {t}", type="event", days_ago=i / 10) for i, t in enumerate(lines)]
    )
    noting = _Noting()
    turn = "What tea does Alice drink these days?"
    resp = run(store, EmbeddingCache(noting, store), turn=turn)
    stripped = semantic_query(turn, {"Alice"})
    assert stripped != turn
    assert noting.batches == ([[turn], [stripped]] if server else [[stripped]])
    assert not resp.flags.degraded and "oolong" in all_lines(resp)


def test_the_query_embeds_in_the_request_thread_only_in_process(store: Store) -> None:
    """In-process channels would compete with the encoder, so the query embeds first in the calling
    thread; a database server's channels wait on it, so the encoder runs beside them in the pool."""
    server = store.search.capabilities.server_side
    noting = _Noting()
    resp = run(store, EmbeddingCache(noting, store), turn="what tea does Alice drink, asked fresh")
    assert not resp.flags.degraded and resp.retrieval_summary.candidate_counts.semantic > 0
    assert len(noting.threads) == 1
    assert noting.threads[0].startswith("loci-query-embed") == server
    assert (noting.threads[0] == threading.current_thread().name) != server
    failing = _Noting(fail=True)
    down = run(store, EmbeddingCache(failing, store), turn="another fresh question about Alice")
    assert down.flags.degraded and down.retrieval_summary.candidate_counts.semantic == 0


def test_a_value_superseded_while_the_channels_ran_is_no_candidate() -> None:
    """The channels ran on the state before a supersession, the records were fetched after it: recall
    returned the old and the new value of one key, both looking current."""
    from engine.memory_service import MemoryCreate, MemoryService
    from engine.storage import open_store

    store = open_store("memory")
    cache = EmbeddingCache(HashEmbedder(), store)
    service = MemoryService(store, embeddings=cache, clock=lambda: NOW - timedelta(days=1))
    common = {"type": "fact", "entity_id": "ent:m", "subject": "ent:m", "predicate": "lives_in"}
    old, new = service.create(
        "o1",
        [
            msgspec.convert({**common, "text": "User lives in Paris", "object": "Paris"}, MemoryCreate),
            msgspec.convert({**common, "text": "User lives in Rome", "object": "Rome"}, MemoryCreate),
        ],
    )
    fetch = store.get_memories

    def superseded_meanwhile(org_id: str, ids: Sequence[str]) -> list[Any]:
        ended = msgspec.structs.replace(old, status="superseded", valid_to=NOW - timedelta(hours=1))
        store.put_memories([ended])  # what a concurrent write commits between channels and fetch
        return fetch(org_id, ids)

    store.get_memories = superseded_meanwhile  # type: ignore[assignment]
    request = msgspec.convert({"query": "Where does the user live?", "entity_id": "ent:m"}, RecallRequest)
    out = recall(store, cache, org_id="o1", agent_id=None, request=request, request_id="r", now=NOW)
    assert [m.text for m in out.matches] == ["User lives in Rome"]


def _scope_of(facts: Sequence[dict[str, Any]]) -> tuple[Store, EmbeddingCache]:
    from engine.memory_service import MemoryCreate, MemoryService
    from engine.storage import open_store

    store = open_store("memory")
    cache = EmbeddingCache(HashEmbedder(), store)
    service = MemoryService(store, embeddings=cache, clock=lambda: NOW - timedelta(days=30))
    service.create("o1", [msgspec.convert({"entity_id": "ent:d", **f}, MemoryCreate) for f in facts])
    return store, cache


def _assemble(store: Store, cache: EmbeddingCache, turn: str, **fields: Any) -> AssembleResponse:
    request = msgspec.convert(
        {"entity_id": "ent:d", "turn": turn, "ingest": {"extract": False, "store_turn": "none"}, **fields},
        AssembleRequest,
    )
    return assemble(store, cache, org_id="o1", agent_id=None, request=request, request_id="r", now=NOW)


def test_the_summary_says_what_a_fact_line_would_beside_its_start() -> None:
    """Past max_facts, two disputed homes and a membership that ends read as two plain values and an
    open-ended fact in the summary."""
    at = (NOW - timedelta(days=20)).isoformat()
    store, cache = _scope_of(
        [
            {
                "type": "fact",
                "text": f"Dave lives in {city}",
                "status": "disputed",
                "timestamp": at,
                "valid_from": at,
            }
            for city in ("Berlin", "Madrid")
        ]
        + [
            {
                "type": "fact",
                "text": "Dave has a gym membership",
                "timestamp": at,
                "valid_to": "2030-01-01T00:00:00Z",
            }
        ]
    )
    for fields in ({"return": {"max_facts": 0}}, {"return": {"include": ["summary"]}}):
        summary = _assemble(store, cache, "Where does Dave live? gym membership", **fields).context.summary
        assert "Dave lives in Berlin (disputed)" in summary and "Dave lives in Madrid (disputed)" in summary
        assert "Dave has a gym membership (until 2030-01-01)" in summary, summary


def test_the_summary_does_not_repeat_what_a_line_says() -> None:
    """Two memories of one text: one has the line, the other was the summary's first entry."""
    store, cache = _scope_of(
        [
            {
                "type": "event",
                "text": "Finn: I moved to Denver last spring",
                "timestamp": (NOW - timedelta(days=d)).isoformat(),
            }
            for d in (3, 9)
        ]
        + [
            {
                "type": "event",
                "text": "Finn: the weather turned cold",
                "timestamp": (NOW - timedelta(days=5)).isoformat(),
            }
        ]
    )
    out = _assemble(store, cache, "When did Finn move to Denver?", **{"return": {"max_events": 1}})
    assert [x for x in out.context.recent_events if "Denver" in x] == ["Finn: I moved to Denver last spring"]
    assert "Denver" not in out.context.summary and "cold" in out.context.summary, out.context.summary
