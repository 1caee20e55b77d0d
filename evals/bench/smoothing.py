"""The SmoothQuant factors of the shipped MiniLM graph, calibrated on LongMemEval turns.

    python -m evals.bench.smoothing          # rewrites engine/embed/minilm_smoothing.json

Runs the float32 graph over `SAMPLE` seeded LongMemEval oracle turns (the encoder bench checks the
result on LoCoMo texts, which the calibration never sees), takes each feed-forward input's largest
magnitude per channel over real tokens, and writes `s = amax ** ALPHA / wmax ** (1 - ALPHA)` for every
layer's `ffn_in` (`wmax`: the largest weight of that input channel), with the sha256 of the weights
they belong to. `engine.embed.minilm` applies them only to those weights.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.embed.minilm import SMOOTHING_FILE, _model_path

SAMPLE = 600
SEED = 0
ALPHA = 0.5


def _texts() -> list[str]:
    from evals.loaders import load_dataset

    dataset = load_dataset("longmemeval-oracle")
    texts = list(dict.fromkeys(t.memory_text() for c in dataset.conversations for t in c.turns))
    random.Random(SEED).shuffle(texts)
    return texts[:SAMPLE]


def _padded(ids: Sequence[list[int]]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(input_ids, attention_mask) of token id lists, right-padded to the longest: the calibration
    reads float32 activations, which a shared pass does not move."""
    width = max(len(x) for x in ids)
    tokens = np.zeros((len(ids), width), dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for row, x in enumerate(ids):
        tokens[row, : len(x)] = x
        mask[row, : len(x)] = 1
    return tokens, mask


def calibrate(texts: list[str]) -> dict[str, Any]:
    import onnxruntime as ort
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    from engine.embed.onnx_encoder import OnnxEncoder, weights_sha256
    from engine.embed.onnx_graph import build_model

    model_dir = Path(_model_path())
    cfg = json.loads((model_dir / "config.json").read_text())
    weights = load_file(str(model_dir / "model.safetensors"))
    layers = int(cfg["num_hidden_layers"])
    model = build_model(weights, heads=int(cfg["num_attention_heads"]), eps=float(cfg["layer_norm_eps"]))
    inputs = [f"l{i}.x1" for i in range(layers)]  # the LayerNorm output each ffn_in reads
    model.graph.output.extend([helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in inputs])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    tokenize = OnnxEncoder(model_dir, b"")._ids
    amax = [np.zeros(int(cfg["hidden_size"]), dtype=np.float64) for _ in inputs]
    for start in range(0, len(texts), 32):
        tokens, mask = _padded(tokenize(texts[start : start + 32]))
        outs = session.run(inputs, {"input_ids": tokens, "attention_mask": mask})
        for i, out in enumerate(outs):
            amax[i] = np.maximum(amax[i], np.abs(out[mask.astype(bool)]).max(axis=0))
    factors: dict[str, list[float]] = {}
    for i in range(layers):
        wmax = np.abs(weights[f"encoder.layer.{i}.intermediate.dense.weight"]).max(axis=0)  # per input
        s = amax[i] ** ALPHA / np.maximum(wmax, 1e-8) ** (1 - ALPHA)
        factors[f"l{i}.ffn_in"] = [float(f"{v:.7g}") for v in np.where(s > 0, s, 1.0)]
    return {
        "weights_sha256": weights_sha256(model_dir / "model.safetensors"),
        "calibration": f"{len(texts)} LongMemEval oracle turns (seed {SEED}), alpha {ALPHA}",
        "factors": factors,
    }


def dumps(data: dict[str, Any]) -> str:
    """The JSON with one line per factor list."""
    factors = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in data["factors"].items()]
    head = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in data.items() if k != "factors"]
    return "\n".join(["{", *head, ' "factors": {', ",\n".join(factors), " }", "}"]) + "\n"


def main() -> None:
    data = calibrate(_texts())
    SMOOTHING_FILE.write_text(dumps(data))
    print(f"wrote {SMOOTHING_FILE} ({data['calibration']})")


if __name__ == "__main__":
    main()
