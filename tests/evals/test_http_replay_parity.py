"""Replaying over the served API (the agents' code path) gives the same answers as the engine in
process, supersession included: facts of user turns go through assemble's ingest, dated by as_of."""

from __future__ import annotations

from evals.local_api import LocalApi
from evals.metrics import metrics_frame, score
from evals.replay import EngineBackend, HttpBackend, ReplayConfig, replay
from evals.synthetic import SyntheticConfig, generate

COLUMNS = ["recall_in_context", "supersession_correct", "stale_leak", "false_supersession"]


def test_http_replay_matches_engine_replay_on_synthetic_scenarios() -> None:
    dataset = generate(SyntheticConfig(seed=3, entities=3))
    config = ReplayConfig(embedder="hash")
    with LocalApi() as api:
        http = metrics_frame(
            score(r)
            for r in replay(dataset, HttpBackend("http://testserver", api.secret, client=api.client), config)
        )
    engine = metrics_frame(score(r) for r in replay(dataset, EngineBackend(config), config))
    assert len(http) == len(engine) > 0
    assert http[COLUMNS].mean().round(6).to_dict() == engine[COLUMNS].mean().round(6).to_dict()
    assert http["supersession_correct"].mean() > 0.5  # facts were ingested over HTTP at all


def test_http_agent_replay_writes_typed_turns_as_the_engine_does() -> None:
    # a fact, note or document is written as that memory type in the agent loop too, not said as a turn
    from evals.synthetic_mixed import MixedConfig, generate_mixed

    dataset = generate_mixed(MixedConfig(seed=3, entities=2, chatter=20))
    config = ReplayConfig(embedder="hash", write="agent")
    with LocalApi() as api:
        http = replay(dataset, HttpBackend("http://testserver", api.secret, client=api.client), config)
    engine = replay(dataset, EngineBackend(config), config)
    assert [r.ranked for r in http] == [r.ranked for r in engine]
    found = ["recall_at_5", "recall_at_10", "mrr", "recall_in_context", "recall_in_context_whole"]
    http_found = metrics_frame(score(r) for r in http)[found]
    assert http_found.equals(metrics_frame(score(r) for r in engine)[found])  # memory ids differ in tokens
