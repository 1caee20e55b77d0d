"""`loci bench encoder`: the MiniLM runtimes side by side on LoCoMo texts.

Variants: `torch` (sentence-transformers; its lean TorchScript pass for queries), `onnx-fp32` (the
onnxruntime graph, float32), `onnx` (the shipped int8 selection, `engine.embed.minilm.INT8_PROJECTIONS`)
and `onnx-int8-all` (every projection in int8, for comparison; not shipped).

For each: cosine to the float32 vectors of sentence-transformers' `encode` on a seeded sample of
LoCoMo turns and questions (min, 1st percentile, mean; batched as writes are, and one text at a time as
queries are), the latency of one query text (one thread), and the throughput of batches of 200 LoCoMo
turns (`LOCI_TORCH_THREADS` threads). Calls alternate between the variants so they see the same load.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import msgspec
import numpy as np
import numpy.typing as npt

from engine.embed.minilm import MiniLMEmbedder, _model_path
from engine.embed.onnx_encoder import OnnxEncoder
from engine.embed.onnx_graph import projection_names
from engine.errors import UnknownName
from evals.bench.harness import Pct, pct

Rows = npt.NDArray[np.float32]
VARIANTS: tuple[str, ...] = ("torch", "onnx-fp32", "onnx", "onnx-int8-all")


class EncoderRow(msgspec.Struct, kw_only=True):
    variant: str
    cos_min: float
    cos_p1: float
    cos_mean: float
    cos_single_min: float
    query: Pct  # ms, one text
    batch_rate: float  # texts per second, batches of 200 turns


class EncoderTable(msgspec.Struct, kw_only=True):
    sample: int
    singles: int
    queries: int
    batches: int
    rows: list[EncoderRow]

    def format(self) -> str:
        lines = [
            f"encoder benchmark: cosine to sentence-transformers float32 on {self.sample} LoCoMo texts "
            f"(batched) and {self.singles} one at a time; {self.queries} one-text queries; "
            f"{self.batches} batches of 200 LoCoMo turns; variants alternated",
            "| runtime | cos min | cos p1 | cos mean | cos min (one text) | query p50 / p95 ms | "
            "batch texts/s |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            lines.append(
                f"| {r.variant} | {r.cos_min:.4f} | {r.cos_p1:.4f} | {r.cos_mean:.4f} | "
                f"{r.cos_single_min:.4f} | {r.query.p50:.2f} / {r.query.p95:.2f} | {r.batch_rate:.0f} |"
            )
        return "\n".join(lines)


def _locomo_texts() -> tuple[list[str], list[str]]:
    from evals.loaders import load_dataset

    dataset = load_dataset("locomo")
    turns = [t.memory_text() for c in dataset.conversations for t in c.turns]
    return turns, list(dict.fromkeys(q.text for q in dataset.questions))


def _variant(name: str, cache_dir: Path) -> tuple[Callable[[list[str]], Rows], Callable[[list[str]], Rows]]:
    """(one-text query call, batch call) for a variant."""
    if name in ("torch", "onnx-fp32", "onnx"):
        emb = MiniLMEmbedder(runtime=name, cache_dir=cache_dir)
        return emb._embed_small, emb.embed
    if name != "onnx-int8-all":
        raise UnknownName("encoder variant", name, VARIANTS, field="variants")
    encoder = OnnxEncoder.open(
        Path(_model_path()), cache_dir, name="all-MiniLM-L6-v2-int8-all", quantize=projection_names(6)
    )
    if encoder is None:
        raise RuntimeError("onnxruntime is not installed")
    threads = MiniLMEmbedder(runtime="torch").threads
    return (lambda texts: encoder(texts, threads=1)), (lambda texts: encoder(texts, threads=threads))


def _reference(texts: Sequence[str]) -> Rows:
    model = MiniLMEmbedder(runtime="torch")._load()
    rows: Rows = model.encode(
        list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    return rows


def run(
    *,
    variants: Sequence[str] = VARIANTS,
    sample: int = 1000,
    singles: int = 200,
    queries: int = 200,
    batches: int = 3,
    cache_dir: str = "./data/models",
    seed: int = 7,
    progress: TextIO | None = sys.stderr,
) -> EncoderTable:
    unknown = [name for name in variants if name not in VARIANTS]
    if unknown:  # before the corpus or any model loads
        raise UnknownName("encoder variant", unknown[0], VARIANTS, field="variants")
    rng = random.Random(seed)
    turns, questions = _locomo_texts()
    texts = rng.sample(turns, sample * 3 // 4) + rng.sample(questions, sample - sample * 3 // 4)
    singles = min(singles, len(texts))  # the header reports how many were encoded one at a time
    if progress is not None:
        print(f"encoder bench: reference vectors for {len(texts)} texts", file=progress, flush=True)
    ref = _reference(texts)
    calls = {name: _variant(name, Path(cache_dir)) for name in variants}
    accuracy: dict[str, tuple[float, float, float, float]] = {}
    for name, (one, many) in calls.items():
        many(turns[:8])  # sessions made and warm
        cos = (np.concatenate([many(texts[i : i + 200]) for i in range(0, len(texts), 200)]) * ref).sum(1)
        single = (np.vstack([one([t]) for t in texts[:singles]]) * ref[:singles]).sum(1)
        accuracy[name] = (
            float(cos.min()),
            float(np.percentile(cos, 1)),
            float(cos.mean()),
            float(single.min()),
        )
    lat: dict[str, list[float]] = {n: [] for n in calls}
    rate: dict[str, list[float]] = {n: [] for n in calls}
    for q in rng.sample(questions, queries):
        for name, (one, _) in calls.items():
            t = time.perf_counter()
            one([q])
            lat[name].append((time.perf_counter() - t) * 1000.0)
    for _ in range(batches):
        batch = rng.sample(turns, 200)
        for name, (_, many) in calls.items():
            t = time.perf_counter()
            many(batch)
            rate[name].append(200 / (time.perf_counter() - t))
    rows = [
        EncoderRow(
            variant=n,
            cos_min=accuracy[n][0],
            cos_p1=accuracy[n][1],
            cos_mean=accuracy[n][2],
            cos_single_min=accuracy[n][3],
            query=pct(lat[n]),
            batch_rate=float(np.median(rate[n])),
        )
        for n in calls
    ]
    return EncoderTable(sample=len(texts), singles=singles, queries=queries, batches=batches, rows=rows)
