from __future__ import annotations

import pytest

from engine.errors import InvalidInput
from evals.replay import ReplayConfig, evidence_questions
from evals.replay_many import check_write_compatible, full_weights, replay_many, with_options
from tests.evals._tiny import CountingBackend, tiny_dataset


def test_full_weights_names_every_channel_and_rejects_unknown() -> None:
    assert full_weights({"bm25": 1}) == {
        "semantic": 0.0,
        "bm25": 1.0,
        "graph_prior": 0.0,
        "recency_decay": 0.0,
        "confidence": 0.0,
    }
    with pytest.raises(InvalidInput):
        full_weights({"bm52": 1.0})


def test_configs_that_write_differently_are_refused() -> None:
    a = ReplayConfig()
    with pytest.raises(InvalidInput, match="embedder"):
        check_write_compatible({"a": a, "b": ReplayConfig(embedder="minilm")})
    with pytest.raises(InvalidInput):
        check_write_compatible({})
    assert check_write_compatible({"a": a, "b": with_options(a, budget=600)}) is a


def test_each_conversation_is_written_once_for_all_configs() -> None:
    data = tiny_dataset(entities=3)
    base = ReplayConfig(rank_depth=0)
    configs = {
        "x": base,
        "bm25": with_options(base, weights={"bm25": 1.0}),
        "small": with_options(base, budget=300),
    }
    backend = CountingBackend(base)
    out = replay_many(data, backend, configs, questions=evidence_questions)
    assert backend.loads == [c.conversation_id for c in data.conversations]
    n = sum(1 for q in data.questions if evidence_questions(q))
    assert [len(out[k]) for k in configs] == [n, n, n]
    assert len(backend.asked) == 3 * n
    # the same questions in the same order under every configuration
    assert [r.question_id for r in out["x"]] == [r.question_id for r in out["small"]]
    assert all(r.budget == 300 for r in out["small"])
    assert all(r.context_tokens <= 300 for r in out["small"])


def test_limit_questions_caps_per_conversation() -> None:
    data = tiny_dataset(entities=2)
    base = ReplayConfig(rank_depth=0)
    out = replay_many(data, CountingBackend(base), {"x": base}, limit_questions=1)
    assert sorted(r.conversation_id for r in out["x"]) == sorted(
        c.conversation_id for c in data.conversations
    )
