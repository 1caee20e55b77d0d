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
