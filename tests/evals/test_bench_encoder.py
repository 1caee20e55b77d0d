"""`loci bench encoder` on a tiny sample (no timing assertions)."""

from __future__ import annotations

import pytest

from server.cli import main

pytestmark = pytest.mark.slow


def test_encoder_bench_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "bench",
                "encoder",
                "--variants",
                "onnx-fp32,onnx",
                "--sample",
                "12",
                "--queries",
                "3",
                "--batches",
                "1",
            ]
        )
        == 0
    )
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| onnx")]
    assert [r.split("|")[1].strip() for r in rows] == ["onnx-fp32", "onnx"]
    fp32_min = float(rows[0].split("|")[2])
    assert fp32_min > 0.9999  # the float32 graph gives the reference vectors
