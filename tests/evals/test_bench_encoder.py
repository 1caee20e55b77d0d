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
    out = capsys.readouterr().out
    # a sample under the 200 default singles encodes all of its 12 texts one at a time, and says so
    assert "on 12 LoCoMo texts (batched) and 12 one at a time; 3 one-text queries" in out
    rows = [line for line in out.splitlines() if line.startswith("| onnx")]
    assert [r.split("|")[1].strip() for r in rows] == ["onnx-fp32", "onnx"]
    fp32_min = float(rows[0].split("|")[2])
    assert fp32_min > 0.9999  # the float32 graph gives the reference vectors
