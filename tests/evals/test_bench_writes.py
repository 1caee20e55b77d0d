"""`loci bench writes` on small scopes (no timing assertions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.cli import main


def test_writes_bench_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "bench",
                "writes",
                "--sizes",
                "0,300",
                "--batches",
                "1",
                "--singles",
                "3",
                "--cache-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    rows = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("| 0 |") or line.startswith("| 300 |")
    ]
    assert len(rows) == 2
    assert not any(tmp_path.iterdir())  # scratch stores removed
