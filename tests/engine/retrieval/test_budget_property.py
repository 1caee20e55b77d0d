"""The budget invariant: whatever the memories, budget, tokenizer and options, the rendered context never
exceeds the budget, counted with the real tokenizer the request names (o200k_base, cl100k_base) or the
estimate, line by line as the engine states in trace.budget, and also as the one joined text an LLM
reads (the lines joined by newlines)."""

from __future__ import annotations

import functools
import re
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.models import MEMORY_TYPES
from engine.retrieval.budget import context_tokens
from engine.retrieval.options import ALL_INCLUDES, AssembleRequest
from engine.retrieval.pipeline import assemble
from engine.retrieval.render import MAX_LINE_TOKENS, RenderItem
from engine.retrieval.summary import MAX_ENTRY_TOKENS, beyond
from engine.retrieval.tokens import TOKENIZERS, get_tokenizer
from engine.storage.in_memory import InMemoryStore

from .helpers import mem

WORDS = ["alice", "tea", "paris", "Acme", "berlin", "jazz", "dog", "東京", "café", "🙂", "12345", "x" * 40]
text_st = st.lists(st.sampled_from(WORDS), min_size=1, max_size=60).map(" ".join) | st.text(
    min_size=1, max_size=300
).filter(lambda t: t.strip() != "")
long_text_st = st.integers(min_value=1, max_value=20000).map(lambda n: ("lorem ipsum 東 " * n)[:n])

memory_st = st.tuples(
    st.sampled_from(MEMORY_TYPES),
    text_st | long_text_st,
    st.floats(min_value=0, max_value=800),
    st.sampled_from([None, "likes", "lives_in"]),
    st.none() | st.floats(min_value=0, max_value=1),
)

#: `2025-12-31 (Wednesday):`, the header line of one day of events (engine.retrieval.render.day_header)
_DAY_HEADER = re.compile(r"\d{4}-\d{2}-\d{2} \(\w+\):")


@st.composite
def options(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {
        "turn": draw(st.sampled_from(["What does Alice like?", "Acme Paris tea", "", "東京 café 🙂"])),
        # small budgets are where trimming happens: draw them more often
        "budget": {
            "max_context_tokens": draw(st.integers(256, 600) | st.integers(256, 8192)),
            "tokenizer": draw(st.sampled_from(TOKENIZERS)),
        },
        "retrieval": {
            "preset": draw(st.sampled_from(["balanced", "fast", "factual", "recent", "graphy"])),
            "normalization": draw(st.sampled_from(["minmax", "zscore", "softmax"])),
            "top_k": draw(st.integers(min_value=1, max_value=100) | st.just(100)),
            "rerank": {"enable": draw(st.booleans())},
            "diversity": {"enable": draw(st.booleans()), "max_per_predicate": draw(st.integers(1, 5))},
        },
        "return": {
            "include": draw(st.lists(st.sampled_from(ALL_INCLUDES), unique=True, max_size=4)),
            "max_facts": draw(st.integers(min_value=0, max_value=50)),
            "max_events": draw(st.integers(min_value=0, max_value=50)),
        },
        "seed_context": {"snippets": draw(st.lists(st.text(min_size=1, max_size=4000), max_size=3))},
    }
    if draw(st.booleans()):
        body["goal"] = draw(st.text(max_size=2000))
    return body


@given(
    memories=st.lists(memory_st, max_size=60), body=options(), pin=st.lists(st.integers(0, 39), max_size=5)
)
def test_context_never_exceeds_budget(memories: list[Any], body: dict[str, Any], pin: list[int]) -> None:
    store = InMemoryStore()
    records = [
        mem(f"m{i}", text, type=kind, days_ago=age, predicate=pred, confidence=conf)
        for i, (kind, text, age, pred, conf) in enumerate(memories)
    ]
    store.put_memories(records)
    cache = EmbeddingCache(HashEmbedder(dim=32), store)
    cache.embed([m.text for m in records])
    body["must_include"] = [f"m{i}" for i in pin]
    request = msgspec.convert({"entity_id": "ent:alice", **body}, AssembleRequest)
    resp = assemble(
        store,
        cache,
        org_id="o1",
        agent_id=None,
        request=request,
        request_id="r",
        now=records[0].timestamp if records else mem("x").timestamp,
    )
    c = resp.context
    budget = body["budget"]["max_context_tokens"]
    tok = get_tokenizer(body["budget"]["tokenizer"])
    used = context_tokens(c.facts, c.recent_events, c.summary, c.sources, tok)
    assert used <= budget
    assert c.token_counts.used == used and c.token_counts.budget == budget
    lines = [line for line in (c.summary, *c.facts, *c.recent_events, *c.sources) if line]
    assert tok.count("\n".join(lines)) <= used
    assert resp.trace.budget.tokenizer == tok.name and resp.trace.budget.method == tok.method
    assert all(line for line in (*c.facts, *c.recent_events, *c.sources))
    include = set(body["return"]["include"])
    assert not c.facts or "facts" in include
    assert not c.recent_events or "recent_events" in include
    assert not c.sources or "sources" in include
    assert not c.summary or "summary" in include
    # pinned (must_include) items are not subject to max_facts / max_events
    assert len(c.facts) <= body["return"]["max_facts"] + len(set(pin))
    events = [
        line for line in c.recent_events if not _DAY_HEADER.fullmatch(line)
    ]  # a day's header is no event
    assert len(events) <= body["return"]["max_events"] + len(set(pin))


# texts for the summary: short and long (past an entry's cap), often the same text twice, in other
# spacing or case; no "|" or newline, so the summary's entries can be read back
_PHRASES = ["Ann: I went skiing.", "bob likes tea", "東京 café 🙂", "x" * 40, "Ann: " + "w " * 300]
summary_text_st = st.tuples(
    st.sampled_from(_PHRASES), st.sampled_from(["", "  ", " more"]), st.booleans()
).map(lambda t: (t[0] + t[1]).upper() if t[2] else t[0] + t[1])


@given(
    texts=st.lists(st.tuples(summary_text_st, st.sampled_from(["2024-01-01", "2024-01-02"])), max_size=12),
    shown=st.lists(summary_text_st, max_size=3),
    room=st.integers(min_value=0, max_value=3000),
    tokenizer=st.sampled_from([*TOKENIZERS, "estimate"]),
)
def test_the_summary_never_says_a_text_twice(
    texts: list[tuple[str, str]], shown: list[str], room: int, tokenizer: str
) -> None:
    """Whatever the candidates: each text once, none a line already says, and within its room."""
    tok = get_tokenizer(tokenizer)
    item = functools.partial(RenderItem, section="recent_events", score=1.0)
    candidates = [
        item(id=f"c{i}", plain=t, line="", rank=i, group=day, when=i) for i, (t, day) in enumerate(texts)
    ]
    lines = [  # an event's line, as `render` cuts it
        item(id=f"s{i}", plain=t, rank=100 + i, line=tok.truncate(" ".join(t.split()), MAX_LINE_TOKENS))
        for i, t in enumerate(shown)
    ]
    summary = beyond(candidates, room, tok, iter(lines))  # `shown` may be any iterable
    assert tok.line_tokens(summary) <= max(room, 0)
    entries = [e.lower() for line in summary.splitlines() for e in line.split(": ", 1)[1].split(" | ")]
    assert len(entries) == len(set(entries))
    said = {" ".join(t.split()).lower() for t in shown}
    cut = {tok.truncate(" ".join(t.split()), MAX_ENTRY_TOKENS).lower() for t in shown}
    assert not (set(entries) & (said | cut))
