"""`loci bench encoder` on a tiny sample (no timing assertions)."""

from __future__ import annotations

import pytest

from evals.bench import encoder
from server.cli import main


def test_an_unknown_encoder_variant_is_refused_before_anything_loads(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`loci bench encoder --variants bogus` ran the int8-all encoder under the name bogus."""

    def loads(*args: object, **kwargs: object) -> None:
        raise AssertionError("loaded before the variants were checked")

    monkeypatch.setattr(encoder, "_locomo_texts", loads)
    monkeypatch.setattr(encoder, "_reference", loads)
    assert main(["bench", "encoder", "--variants", "onnx,bogus", "--sample", "12"]) == 2
    err = capsys.readouterr().err
    assert err == "error: unknown encoder variant 'bogus'; valid: onnx, onnx-fp32, onnx-int8-all, torch\n"


@pytest.mark.slow
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
