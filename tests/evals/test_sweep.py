from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from engine.errors import InvalidInput
from evals.metrics import QuestionRecord
from evals.replay import ReplayConfig
from evals.rundir import dataset_sha256, run_settings
from evals.sweep import (
    Candidate,
    Split,
    SweepConfig,
    candidates,
    retrieval_block,
    run_sweep,
    score_candidates,
    simplex_grid,
    split_conversations,
)
from tests.evals._tiny import CountingBackend, tiny_dataset


def test_split_is_by_conversation_seeded_and_complete() -> None:
    ids = [f"c{i}" for i in range(10)]
    split = split_conversations(ids, 0.3, seed=1)
    assert len(split.held_out) == 3 and len(split.tune) == 7
    assert set(split.tune) | set(split.held_out) == set(ids)
    assert not set(split.tune) & set(split.held_out)
    assert split == split_conversations(ids, 0.3, seed=1)
    assert split != split_conversations(ids, 0.3, seed=2)
    # at least one conversation on each side, whatever the share
    assert len(split_conversations(ids[:2], 0.01).held_out) == 1
    assert len(split_conversations(ids[:2], 0.99).tune) == 1
    with pytest.raises(InvalidInput):
        split_conversations(["only"], 0.5)


def test_simplex_grid() -> None:
    grid = simplex_grid(0.5)
    assert len(grid) == 15  # C(2 + 5 - 1, 5 - 1)
    assert all(sum(w.values()) == pytest.approx(1.0) for w in grid)
    assert {"semantic": 0.5, "bm25": 0.5, "graph_prior": 0.0, "recency_decay": 0.0, "confidence": 0.0} in grid
    with pytest.raises(InvalidInput):
        simplex_grid(0.3)


def test_grid_candidates_are_the_product_plus_preset_references() -> None:
    config = SweepConfig(
        mode="grid",
        presets=("balanced", "fast"),
        normalizations=("minmax", "zscore"),
        half_lives=(7, 45),
        weights=({"bm25": 1.0}, {"semantic": 1.0}),
    )
    cands = candidates(config)
    assert len(cands) == 2 * 2 + 2 * 2 * 2 * 2  # references + presets x norms x weights x half-lives
    refs = [c for c in cands if c.weights is None]
    assert {(c.preset, c.normalization) for c in refs} == {
        ("balanced", "minmax"),
        ("balanced", "zscore"),
        ("fast", "minmax"),
        ("fast", "zscore"),
    }


def test_random_candidates_are_seeded_and_on_the_simplex() -> None:
    config = SweepConfig(mode="random", samples=5, seed=4, presets=("balanced", "recent"))
    a, b = candidates(config), candidates(config)
    assert [c.name() for c in a] == [c.name() for c in b]
    drawn = [c for c in a if c.weights is not None]
    assert len(drawn) == 5
    assert all(sum(c.weights.values()) == pytest.approx(1.0, abs=1e-3) for c in drawn if c.weights)


def _rec(qid: str, conv: str, in_context: bool) -> QuestionRecord:
    from evals.metrics import ContextLine

    line = ContextLine(section="sources", text="x", tokens=1, turn_ids=("t1",) if in_context else ())
    return QuestionRecord(
        question_id=qid,
        conversation_id=conv,
        category="c",
        evidence=("t1",),
        ranked=("t1",),
        lines=(line,),
        context_tokens=1,
        budget=100,
    )


def test_scores_are_split_by_conversation() -> None:
    cand = Candidate(preset="balanced", normalization="minmax", weights=None, half_life=None)
    other = Candidate(preset="fast", normalization="minmax", weights=None, half_life=None)
    records = {
        cand.name(): [_rec("q1", "a", True), _rec("q2", "a", False), _rec("q3", "b", True)],
        other.name(): [_rec("q1", "a", True), _rec("q2", "a", True), _rec("q3", "b", False)],
    }
    table = score_candidates(
        records,
        {cand.name(): cand, other.name(): other},
        Split(tune=("a",), held_out=("b",)),
        "recall_in_context",
    )
    # best by the tuning conversation "a": other (2/2) before cand (1/2)
    assert list(table["name"]) == [other.name(), cand.name()]
    assert list(table["train_recall_in_context"]) == [1.0, (1 + 0) / 2]
    assert list(table["test_recall_in_context"]) == [0.0, 1.0]
    assert list(table["n_test"]) == [1, 1]


def test_retrieval_block() -> None:
    c = Candidate(preset="fast", normalization="zscore", weights={"bm25": 1.0}, half_life=7)
    assert retrieval_block(c) == {
        "preset": "fast",
        "normalization": "zscore",
        "weights": {"bm25": 1.0},
        "recency_half_life_days": 7,
    }


def test_run_sweep_writes_once_per_conversation(tmp_path: Path) -> None:
    data = tiny_dataset(entities=4)
    config = SweepConfig(mode="random", samples=2, presets=("balanced", "fast"), holdout=0.5, seed=0)
    backend = CountingBackend(ReplayConfig())
    result = run_sweep(config, out_dir=tmp_path, dataset=data, backend=backend)
    assert backend.loads == [c.conversation_id for c in data.conversations]
    assert len(result.results) == len(candidates(config))
    held = set(result.split.held_out)
    assert len(held) == 2
    assert result.best.name() == result.results.loc[0, "name"]
    assert result.run_dir is not None
    best = json.loads((result.run_dir / "best.json").read_text())
    assert best["retrieval"]["preset"] == result.best.preset
    cfg = json.loads((result.run_dir / "config.json").read_text())
    assert cfg["dataset"] == {"name": data.name, "sha256": dataset_sha256(data)}
    assert cfg["settings"] == run_settings()
    assert {"results.csv", "report.md", "sweep_scatter.png", "sweep_by_preset.png", "config.json"} <= {
        p.name for p in result.run_dir.iterdir()
    }


@pytest.mark.parametrize(
    ("dataset", "categories", "named"),
    [
        ("tiny", "nope", "unknown question categories ['nope']"),
        ("tiny", "{known},tmporal", "unknown question categories ['tmporal']"),
        ("locomo", "adversarial", "the run would ask no question"),
    ],
)
def test_sweep_refuses_categories_that_ask_nothing_before_replaying(
    dataset: str,
    categories: str,
    named: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An unknown category, a typo in a list, or one without evidence swept 0 questions and still
    named a best setting."""
    import evals.sweep
    from evals.model import encode_dataset
    from server.cli import main

    def no_replay(*args: object, **kwargs: object) -> None:
        raise AssertionError("replayed")

    monkeypatch.setattr(evals.sweep, "replay_many", no_replay)
    if dataset == "tiny":
        data = tiny_dataset(entities=2)
        dataset = str(tmp_path / "tiny.json")
        Path(dataset).write_bytes(encode_dataset(data))
        categories = categories.format(known=data.questions[0].category)
    out = tmp_path / "runs"
    argv = ["eval", "sweep", "--dataset", dataset, "--categories", categories, "--limit", "2"]
    assert main([*argv, "--embedder", "hash", "--samples", "1", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {named}") and err.count("\n") == 1
    assert not out.exists()


def test_a_lower_is_better_metric_ranks_the_lowest_tuning_score_first() -> None:
    # the chosen candidate is the one that leaks stale values least on the tuning conversations
    leaky = Candidate(preset="balanced", normalization="minmax", weights=None, half_life=None)
    clean = Candidate(preset="fast", normalization="minmax", weights=None, half_life=None)

    def probe(qid: str, conv: str, leaks: bool) -> QuestionRecord:
        from evals.metrics import ContextFact

        text = "Ana lives in Oslo" if leaks else "Ana lives in Lisbon"
        return QuestionRecord(
            question_id=qid,
            conversation_id=conv,
            category="c",
            current_values=("Lisbon",),
            stale_values=("Oslo",),
            facts=(ContextFact(text=text),),
        )

    records = {
        leaky.name(): [probe("q1", "a", True), probe("q2", "b", True)],
        clean.name(): [probe("q1", "a", False), probe("q2", "b", False)],
    }
    table = score_candidates(
        records, {leaky.name(): leaky, clean.name(): clean}, Split(tune=("a",), held_out=("b",)), "stale_leak"
    )
    assert list(table["name"]) == [clean.name(), leaky.name()]
    assert list(table["train_stale_leak"]) == [0.0, 1.0]


def test_an_unknown_metric_is_refused_before_any_conversation_is_written() -> None:
    backend = CountingBackend(ReplayConfig())
    config = SweepConfig(mode="random", samples=1, metric="recal_in_context")
    with pytest.raises(InvalidInput, match="metric"):
        run_sweep(config, dataset=tiny_dataset(entities=2), backend=backend, write=False)
    assert backend.loads == []


def test_the_split_is_over_the_conversations_that_ask_a_question() -> None:
    # a conversation none of whose questions is asked would leave one side of the split empty
    data = tiny_dataset(entities=4)
    asked = [c.conversation_id for c in data.conversations][:2]
    data = msgspec.structs.replace(
        data, questions=tuple(q for q in data.questions if q.conversation_id in asked)
    )
    config = SweepConfig(mode="random", samples=1, holdout=0.5, seed=0)
    result = run_sweep(config, dataset=data, write=False)
    assert sorted([*result.split.tune, *result.split.held_out]) == sorted(asked)
    assert (result.results["n_train"] > 0).all() and (result.results["n_test"] > 0).all()
