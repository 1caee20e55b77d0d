"""`--ingest events`, `--budgets` and `loci eval heldout`: the protocol of the evidence-in-context eval."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from engine.errors import InvalidInput
from evals.heldout import HeldoutConfig, halves, run_heldout
from evals.loaders import load_dataset
from evals.replay_many import replay_many
from evals.run import CHOSEN, RunConfig, budget_table, configurations, run_eval, select
from tests.evals._tiny import tiny_dataset


def test_ingest_events_protocol() -> None:
    cfg = RunConfig(dataset="locomo", ingest="events").replay_config()
    assert not cfg.extract and cfg.max_events == 200
    assert RunConfig(ingest="events", max_events=7).replay_config().max_events == 7
    assert RunConfig().replay_config().extract and RunConfig().replay_config().max_events is None
    locomo = select(load_dataset("locomo"), RunConfig(dataset="locomo", ingest="events", limit=1))
    conv = locomo.conversations[0]
    last = max(s.date for s in conv.sessions)
    assert {q.asked_at for q in locomo.questions} == {last + timedelta(days=1)}


def test_budgets_are_more_configurations_and_a_table(tmp_path: Path) -> None:
    config = RunConfig(
        dataset="synthetic", budget=1200, budgets=(600, 1200, 2400), rank_depth=0, baselines=False
    )
    assert list(configurations(config)) == [CHOSEN, f"{CHOSEN}@600", f"{CHOSEN}@2400"]
    result = run_eval(config, dataset=tiny_dataset(entities=2), out_dir=tmp_path)
    table = budget_table(result.summaries, config)
    assert list(table.columns) == ["600 tokens", "1200 tokens", "2400 tokens"] and "all" in table.index
    assert table.loc["all"].is_monotonic_increasing  # more budget never holds less evidence here
    assert result.run_dir is not None and (result.run_dir / "recall_vs_budget.png").stat().st_size > 0
    assert "by category and budget" in (result.run_dir / "report.md").read_text()
    assert budget_table(result.summaries, RunConfig(budget=1200)) is None


def test_halves() -> None:
    assert halves(["a", "b", "c", "d"], ()) == {"A": ["a", "b"], "B": ["c", "d"]}
    assert halves(["a", "b", "c"], ("c",)) == {"A": ["c"], "B": ["a", "b"]}
    with pytest.raises(InvalidInput):
        halves(["a", "b"], ("x",))
    with pytest.raises(InvalidInput):
        halves(["a", "b"], ("a", "b"))


def test_heldout_chooses_on_one_half_and_scores_the_other(tmp_path: Path) -> None:
    data = tiny_dataset(entities=4)
    off = {
        "expand": {"neighbors": 0, "day_weight": 0},
        "weights": {"semantic": 0, "bm25": 0, "graph_prior": 0, "recency_decay": 1, "confidence": 0},
    }
    config = HeldoutConfig(
        dataset="synthetic",
        ingest="facts",
        candidates={"default": {}, "recency-only": off},
        budgets=(600, 1200),
        embedder="hash",
        categories=(),
    )
    result = run_heldout(config, dataset=data, out_dir=tmp_path)
    ids = [c.conversation_id for c in data.conversations]
    assert result.halves == {"A": ids[:2], "B": ids[2:]}
    assert set(result.selection.index) == {"default", "recency-only"}
    for half, name in result.chosen.items():  # the best on its own half
        assert result.selection.loc[name, half] == result.selection[half].max()
    assert list(result.heldout.columns) == ["600 tokens", "1200 tokens"] and "all" in result.heldout.index
    assert result.run_dir is not None and (result.run_dir / "report.md").exists()


def test_heldout_from_the_command_line_takes_every_category_of_a_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not only LoCoMo's four: a dataset of other categories is held out whole, and a category it
    lacks is a clear error."""
    from evals.model import encode_dataset
    from server.cli import main

    path = tmp_path / "tiny.json"
    path.write_bytes(encode_dataset(tiny_dataset(entities=2)))
    argv = ["eval", "heldout", "--dataset", str(path), "--embedder", "hash", "--budgets", "600"]
    assert main([*argv, "--out", str(tmp_path / "runs")]) == 0
    assert "held-out recall_in_context_whole" in capsys.readouterr().out
    assert main([*argv, "--categories", "multi-hop", "--out", str(tmp_path / "runs")]) == 2
    assert "unknown question categories ['multi-hop']" in capsys.readouterr().err


def test_heldout_from_the_command_line_asks_only_the_first_questions_of_each_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--limit-questions 1` asks one of each conversation's four questions, on both halves."""
    import evals.heldout
    from evals.model import encode_dataset
    from server.cli import main

    asked: list[list[str]] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        records = replay_many(*args, **kwargs)
        asked.append(sorted(r.conversation_id for recs in records.values() for r in recs))
        return records

    monkeypatch.setattr(evals.heldout, "replay_many", spy)
    path = tmp_path / "tiny.json"
    path.write_bytes(encode_dataset(tiny_dataset(entities=2)))
    argv = ["eval", "heldout", "--dataset", str(path), "--embedder", "hash", "--budgets", "600"]
    assert main([*argv, "--limit-questions", "1", "--out", str(tmp_path / "runs")]) == 0
    # the choice on both halves, then each half scored under the other's choice
    assert asked == [["syn-000", "syn-001"], ["syn-001"], ["syn-000"]]


def test_heldout_chooses_on_any_rate_metric_and_tables_it(tmp_path: Path) -> None:
    data = tiny_dataset(entities=4)
    config = HeldoutConfig(dataset="synthetic", ingest="facts", budgets=(600,), embedder="hash")
    result = run_heldout(msgspec.structs.replace(config, metric="recall_at_10"), dataset=data, write=False)
    assert result.heldout.equals(result.heldout_by_metric["recall_at_10"])
    with pytest.raises(InvalidInput, match="metric"):  # refused before any replay
        run_heldout(msgspec.structs.replace(config, metric="question_id"), dataset=data, write=False)


def test_heldout_halves_the_conversations_that_ask_a_question() -> None:
    data = tiny_dataset(entities=4)
    asked = [c.conversation_id for c in data.conversations][:2]
    data = msgspec.structs.replace(
        data, questions=tuple(q for q in data.questions if q.conversation_id in asked)
    )
    config = HeldoutConfig(dataset="synthetic", ingest="facts", budgets=(600,), embedder="hash")
    result = run_heldout(config, dataset=data, write=False)
    assert result.halves == {"A": asked[:1], "B": asked[1:]}
    assert result.selection.notna().all().all()
    with pytest.raises(InvalidInput, match="ask no question"):
        silent = [c.conversation_id for c in data.conversations][3]
        run_heldout(msgspec.structs.replace(config, split=(asked[0], silent)), dataset=data, write=False)
