"""`loci bench peers`: Loci next to mem0 on a tiny LoCoMo slice (runs where mem0ai is installed)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evals.bench import peers
from server.cli import main

pytestmark = pytest.mark.slow


def test_the_command_needs_mem0(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(peers, "mem0_version", lambda: None)
    assert main(["bench", "peers", "--turns", "2"]) == 2
    assert "loci[peers]" in capsys.readouterr().err


def test_locomo_data_is_turns_in_order_and_distinct_questions() -> None:
    turns, questions = peers.locomo_data(30, 10)
    assert len(turns) == 30 and len(questions) == len(set(questions)) == 10
    assert all(":" in t.text for t in turns)
    assert [t.timestamp for t in turns] == sorted(t.timestamp for t in turns)


def test_single_writes_keep_their_turns_when_the_bulk_load_takes_the_whole_corpus() -> None:
    data = [peers.Turn(f"t{i}", None) for i in range(10)]
    bulk, single = peers.split_turns(data, turns=10, singles=3)
    assert [t.text for t in single] == ["t7", "t8", "t9"] and len(bulk) == 7
    bulk, single = peers.split_turns(data, turns=4, singles=3)
    assert len(bulk) == 4 and [t.text for t in single] == ["t4", "t5", "t6"]
    with pytest.raises(ValueError):
        peers.split_turns(data, turns=10, singles=10)


@pytest.mark.skipif(
    peers.mem0_version() is None, reason="mem0ai is not installed (pip install 'loci[peers]')"
)
def test_peers_bench_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "peers.md"
    code = main(
        [
            "bench",
            "peers",
            "--turns",
            "12",
            "--reads",
            "3",
            "--singles",
            "2",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "| read p50 ms |" in printed and "| bulk writes / s" in printed and "mem0 2.2.1" in printed
    assert out.read_text().strip() in printed
    assert not any((tmp_path / "cache").iterdir())  # scratch stores removed
    cells = [line.split("|")[2:5] for line in printed.splitlines() if line.startswith("| read p50")]
    assert all(
        math.isfinite(float(c.strip().rstrip("x"))) and float(c.strip().rstrip("x")) > 0 for c in cells[0]
    )
