from typing import Any

import msgspec
import pytest

from engine.retrieval.options import AssembleRequest, RecallRequest


def decode(body: dict[str, Any]) -> AssembleRequest:
    return msgspec.convert(body, AssembleRequest)


BASE = {"entity_id": "ent:alice", "turn": "hi"}


def test_defaults() -> None:
    req = decode(BASE)
    assert req.namespace == "default" and req.goal is None and req.as_of is None
    assert req.budget_tokens() == (1200, "default")
    assert req.retrieval.normalization == "minmax" and req.retrieval.preset is None
    assert req.retrieval.diversity.max_per_predicate == 3 and req.retrieval.diversity.max_per_source == 5
    assert req.return_.include == ["facts", "recent_events", "summary", "sources"]
    assert (req.return_.max_facts, req.return_.max_events) == (12, 6)
    assert req.policy.pii_redaction == "auto" and req.policy.egress_rehydration == "none"
    assert req.ingest.store_turn == "event" and req.ingest.upsert_conflicts == "smart" and req.ingest.extract


def test_return_is_the_wire_name() -> None:
    req = msgspec.json.decode(b'{"entity_id":"e","turn":"t","return":{"max_facts":2}}', type=AssembleRequest)
    assert req.return_.max_facts == 2
    assert b'"return"' in msgspec.json.encode(req)


def test_budget_precedence() -> None:
    assert decode({**BASE, "max_context_tokens": 300}).budget_tokens() == (300, "max_context_tokens")
    both = decode({**BASE, "max_context_tokens": 300, "budget": {"max_context_tokens": 500}})
    assert both.budget_tokens() == (500, "budget.max_context_tokens")
    assert decode({**BASE, "budget": {}}).budget_tokens() == (1200, "default")
    # a budget object that names only the tokenizer keeps the caller's top-level budget
    tokenizer_only = decode({**BASE, "max_context_tokens": 300, "budget": {"tokenizer": "cl100k_base"}})
    assert tokenizer_only.budget_tokens() == (300, "max_context_tokens")
    assert tokenizer_only.tokenizer_name() == "cl100k_base"


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"turn": "x" * 20001}, "$.turn"),
        ({"goal": "x" * 2001}, "$.goal"),
        ({"seed_context": {"snippets": ["x" * 4001]}}, "$.seed_context.snippets[0]"),
        ({"budget": {"max_context_tokens": 255}}, "$.budget.max_context_tokens"),
        ({"budget": {"max_context_tokens": 8193}}, "$.budget.max_context_tokens"),
        ({"max_context_tokens": 100}, "$.max_context_tokens"),
        ({"retrieval": {"top_k": 0}}, "$.retrieval.top_k"),
        ({"retrieval": {"top_k": 101}}, "$.retrieval.top_k"),
        ({"retrieval": {"depth": 3}}, "$.retrieval.depth"),
        ({"retrieval": {"weights": {"semantic": "high"}}}, "$.retrieval.weights.semantic"),
        ({"retrieval": {"weights": {"semantic": -1}}}, "$.retrieval.weights.semantic"),
        ({"retrieval": {"weights": {"vibes": 1}}}, "$.retrieval.weights"),
        ({"retrieval": {"preset": "turbo"}}, "$.retrieval.preset"),
        ({"retrieval": {"normalization": "l2"}}, "$.retrieval.normalization"),
        ({"return": {"include": ["facts", "gossip"]}}, "$.return.include[1]"),
        ({"policy": {"pii_redaction": "maybe"}}, "$.policy.pii_redaction"),
        ({"ingest": {"store_turn": "diary"}}, "$.ingest.store_turn"),
        ({"as_of": "yesterday"}, "$.as_of"),
    ],
)
def test_bounds_name_the_field(patch: dict[str, Any], field: str) -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        decode({**BASE, **patch})
    assert field in str(info.value)


def test_edges_accepted() -> None:
    req = decode(
        {
            **BASE,
            "turn": "x" * 20000,
            "goal": "g" * 2000,
            "budget": {"max_context_tokens": 256},
            "retrieval": {
                "top_k": 100,
                "depth": 0,
                "preset": "graphy",
                "normalization": "softmax",
                "weights": {"semantic": 1, "bm25": 0.5},
            },
        }
    )
    assert req.retrieval.top_k == 100 and req.retrieval.weights is not None
    assert req.retrieval.weights.semantic == 1.0


def test_recall_request() -> None:
    req = msgspec.convert(
        {"query": "tea", "entity_id": "ent:a", "limit": 5, "return": {"trace": True}}, RecallRequest
    )
    assert req.limit == 5 and req.return_.trace
    with pytest.raises(msgspec.ValidationError, match=r"\$\.limit"):
        msgspec.convert({"query": "q", "limit": 0}, RecallRequest)
