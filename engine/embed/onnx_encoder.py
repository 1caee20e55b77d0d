"""A sentence-transformers BERT encoder run by onnxruntime, from the weights in a local model directory.

The graph (`engine.embed.onnx_graph`) is written from the directory's `model.safetensors` on first
use and cached as `<cache_dir>/<name>-<digest>.onnx`; the digest covers the weights (their sha256,
read once per process), the graph version, the int8 and blockwise projections (with the block size)
and the smoothing factors, so a changed model or graph never reads a stale file. The file is written
to a temporary name and renamed, so concurrent first uses (server workers, test workers) do not see a
partial file. Nothing is downloaded. Where the cache directory is not writable the graph is built in
memory.

Texts are tokenized with the directory's `tokenizer.json` (the Rust `tokenizers` BERT tokenizer that
sentence-transformers uses, with its strip and truncation at `max_seq_length`). Every text runs its
own forward pass: the int8 products scale their activations once per pass (DynamicQuantizeMatMul,
QAttention), so in a shared pass a text's vector would depend on the texts beside it; alone, a text
has one vector whatever it is written or asked with (and is never padded). With more than one thread
a batch's texts are shared among one-thread sessions ("lanes") that run side by side: at these
matrix sizes that beats one session splitting each product across its threads. Every session
uses one copy of the graph's large initializers (the word embeddings), loaded once per encoder.

`OnnxEncoder.open` returns None where onnxruntime/onnx are missing or the model is not one the graph
reproduces (another architecture, activation, position embedding or pooling); the caller keeps its
torch path.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import queue
import tempfile
import threading
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.embed.onnx_graph import BLOCK, SESSION_DISABLED_OPTIMIZERS

log = logging.getLogger(__name__)

GRAPH_VERSION = 4
SHARED_MIN_BYTES = 1 << 20  # initializers this large (the word embeddings) are loaded once for every session

Rows = npt.NDArray[np.float32]


def _read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def supported(model_dir: Path) -> bool:
    """True when the directory holds a BERT encoder with mean pooling and normalization: what the graph
    reproduces exactly."""
    try:
        modules = [m["type"].rsplit(".", 1)[-1] for m in _read_json(model_dir / "modules.json")]
        pooling = _read_json(model_dir / "1_Pooling" / "config.json")
        cfg = _read_json(model_dir / "config.json")
    except (OSError, ValueError, KeyError, TypeError):
        return False
    mean_only = pooling.get("pooling_mode_mean_tokens") is True and not any(
        pooling.get(k)
        for k in (
            "pooling_mode_cls_token",
            "pooling_mode_max_tokens",
            "pooling_mode_mean_sqrt_len_tokens",
            "pooling_mode_weightedmean_tokens",
            "pooling_mode_lasttoken",
        )
    )
    return (
        modules == ["Transformer", "Pooling", "Normalize"]
        and mean_only
        and cfg.get("model_type") == "bert"
        and cfg.get("hidden_act") == "gelu"
        and cfg.get("position_embedding_type", "absolute") == "absolute"
        and (model_dir / "model.safetensors").is_file()
        and (model_dir / "tokenizer.json").is_file()
    )


Smoothing = Mapping[str, npt.NDArray[np.float32]]


@functools.lru_cache(maxsize=8)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def weights_sha256(weights: Path) -> str:
    """The sha256 of a weights file, read once per process while the file is unchanged (the graph cache
    and the smoothing factors both key on it)."""
    st = weights.stat()
    return _file_sha256(str(weights), st.st_size, st.st_mtime_ns)


def _digest(weights: Path, quantize: Collection[str], smooth: Smoothing, blockwise: Collection[str]) -> str:
    head = f"graph {GRAPH_VERSION}; int8 {sorted(quantize)}; blocks of {BLOCK} {sorted(blockwise)}\n"
    h = hashlib.sha256(head.encode())
    for name in sorted(smooth):
        h.update(f"smooth {name}\n".encode() + np.asarray(smooth[name], dtype=np.float32).tobytes())
    h.update(f"weights {weights_sha256(weights)}".encode())
    return h.hexdigest()[:16]


def _build_bytes(
    model_dir: Path, quantize: Collection[str], smooth: Smoothing, blockwise: Collection[str]
) -> bytes:
    from safetensors.numpy import load_file

    from engine.embed.onnx_graph import build_model

    cfg = _read_json(model_dir / "config.json")
    weights = load_file(str(model_dir / "model.safetensors"))
    model = build_model(
        weights,
        heads=int(cfg["num_attention_heads"]),
        eps=float(cfg["layer_norm_eps"]),
        quantize=quantize,
        smooth=smooth,
        blockwise=blockwise,
    )
    data: bytes = model.SerializeToString()
    return data


def graph_file(
    model_dir: Path,
    cache_dir: Path,
    name: str,
    quantize: Collection[str],
    smooth: Smoothing | None = None,
    blockwise: Collection[str] = (),
) -> Path | bytes:
    """The cached graph's path (written on first use), or the graph's bytes when the cache dir is not
    writable."""
    smooth = smooth or {}
    path = cache_dir / f"{name}-{_digest(model_dir / 'model.safetensors', quantize, smooth, blockwise)}.onnx"
    if path.is_file():
        return path
    data = _build_bytes(model_dir, quantize, smooth, blockwise)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=cache_dir)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("cannot cache the encoder graph in %s (%s); built in memory", cache_dir, exc)
        return data
    return path


def passes(ids: Sequence[list[int]]) -> list[int]:
    """Row numbers of `ids` in the order their passes run: longest first, so lanes finish together."""
    return sorted(range(len(ids)), key=lambda i: -len(ids[i]))


class OnnxEncoder:
    """texts -> L2-normalized rows, on onnxruntime. Small batches (queries) run on one session per thread
    count, each with its own lock; large batches on `threads` one-thread lane sessions of their own, so a
    query pass never waits behind a batch."""

    def __init__(self, model_dir: Path, graph: Path | bytes) -> None:
        from tokenizers import Tokenizer

        self.graph = graph
        max_len = int(_read_json(model_dir / "sentence_bert_config.json").get("max_seq_length", 512))
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_len)
        self.tokenizer.no_padding()
        self._sessions: dict[int, tuple[Any, threading.Lock]] = {}
        self._guard = threading.Lock()
        # idle lane sessions: a pass takes one and gives it back, so concurrent batches share `threads`
        self._lanes: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lane_count = 0
        self._helpers: ThreadPoolExecutor | None = None
        self._helper_count = 0
        self._shared: dict[str, tuple[npt.NDArray[Any], Any]] | None = None  # name -> (array, OrtValue)

    @classmethod
    def open(
        cls,
        model_dir: Path,
        cache_dir: Path,
        *,
        name: str,
        quantize: Collection[str] = (),
        smooth: Smoothing | None = None,
        blockwise: Collection[str] = (),
    ) -> OnnxEncoder | None:
        try:
            import onnx  # noqa: F401
            import onnxruntime  # noqa: F401
        except ImportError:
            return None
        if not supported(model_dir):
            return None
        encoder = cls(model_dir, graph_file(model_dir, cache_dir, name, quantize, smooth, blockwise))
        encoder._session(1)  # a runtime that cannot load the graph fails here, where the caller falls back
        return encoder

    def _shared_initializers(self) -> dict[str, tuple[npt.NDArray[Any], Any]]:
        """The graph's large initializers as OrtValues every session uses instead of its own copy (the
        arrays are kept alive with them); read once, under `_guard`."""
        if self._shared is None:
            import onnx
            import onnxruntime as ort
            from onnx import numpy_helper

            model = (
                onnx.load(str(self.graph))
                if isinstance(self.graph, Path)
                else onnx.load_from_string(self.graph)
            )
            shared = {}
            for tensor in model.graph.initializer:
                if len(tensor.raw_data) >= SHARED_MIN_BYTES:
                    array = np.ascontiguousarray(numpy_helper.to_array(tensor))
                    shared[tensor.name] = (array, ort.OrtValue.ortvalue_from_numpy(array))
            self._shared = shared
        return self._shared

    def _new_session(self, threads: int) -> Any:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        for name, (_, value) in self._shared_initializers().items():
            opts.add_initializer(name, value)
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # no spin-waiting pool threads: on a busy machine they steal the core they wait for
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        source = str(self.graph) if isinstance(self.graph, Path) else self.graph
        return ort.InferenceSession(
            source,
            opts,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=list(SESSION_DISABLED_OPTIMIZERS),
        )

    def _session(self, threads: int) -> tuple[Any, threading.Lock]:
        with self._guard:
            found = self._sessions.get(threads)
            if found is None:
                found = self._sessions[threads] = (self._new_session(threads), threading.Lock())
            return found

    def _open_lanes(self, lanes: int) -> ThreadPoolExecutor:
        """At least `lanes` one-thread lane sessions, and the helper threads that drive all but one."""
        with self._guard:
            while self._lane_count < lanes:
                self._lanes.put(self._new_session(1))
                self._lane_count += 1
            if self._helpers is None or self._helper_count < lanes - 1:
                self._helpers = ThreadPoolExecutor(max_workers=lanes - 1, thread_name_prefix="loci-encode")
                self._helper_count = lanes - 1
            return self._helpers

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch([t.strip() for t in texts])]

    def _run(self, session: Any, ids: list[int]) -> Rows:
        """One text's pass: its row (1 x dim)."""
        tokens = np.asarray([ids], dtype=np.int64)
        out: Rows = session.run(None, {"input_ids": tokens, "attention_mask": np.ones_like(tokens)})[0]
        return out

    def begin(self, texts: Sequence[str]) -> Future[Rows]:
        """The texts' passes on the two-thread session's own pool thread (`run_async`), while the caller
        keeps the GIL for its other work; the Future holds the rows (or the first failure). Each text has
        its own pass, as in `__call__`, so the same vectors."""
        ids = self._ids(texts)
        session, _ = self._session(2)  # a one-thread session has no pool thread to run on
        rows: dict[int, Rows] = {}
        lock = threading.Lock()
        result: Future[Rows] = Future()
        feeds = [
            {"input_ids": (t := np.asarray([row], dtype=np.int64)), "attention_mask": np.ones_like(t)}
            for row in ids
        ]  # alive until every pass is done, as the encoder must be: a session freed while it runs crashes

        def finish(out: list[Rows], i: int, err: str) -> None:
            try:  # called from onnxruntime's thread: what goes wrong goes into the Future
                if err:
                    raise RuntimeError(err)
                with lock:
                    rows[i] = out[0]
                    if len(rows) < len(ids) or result.done():
                        return
                stacked = np.empty((len(ids), out[0].shape[1]), dtype=np.float32)
                for j, row in rows.items():
                    stacked[j] = row[0]
                result.set_result(stacked)
            except Exception as exc:
                with lock:
                    if not result.done():
                        result.set_exception(exc)

        for i in passes(ids):
            session.run_async(None, feeds[i], finish, i)
        return result

    def __call__(self, texts: Sequence[str], *, threads: int = 1) -> Rows:
        if not texts:
            raise ValueError("no texts")
        ids = self._ids(texts)
        order = passes(ids)
        done: list[tuple[int, Rows]] = []
        if len(ids) <= 4 or threads <= 1:
            session, lock = self._session(threads)
            for i in order:
                with lock:  # a query may pass between two texts of a batch
                    done.append((i, self._run(session, ids[i])))
        else:
            self._lane_passes(ids, order, threads, done)
        rows = np.empty((len(ids), done[0][1].shape[1]), dtype=np.float32)
        for i, row in done:
            rows[i] = row[0]
        return rows

    def _lane_passes(
        self,
        ids: Sequence[list[int]],
        order: list[int],
        threads: int,
        done: list[tuple[int, Rows]],
    ) -> None:
        """The passes of `order`'s texts on `threads` lanes side by side: this thread and helpers each
        take the next text and an idle lane session until none is left."""
        helpers = self._open_lanes(threads)
        pending = iter(order)
        take = threading.Lock()

        def drive() -> None:
            while True:
                with take:
                    i = next(pending, None)
                if i is None:
                    return
                session = self._lanes.get()
                try:
                    done.append((i, self._run(session, ids[i])))
                finally:
                    self._lanes.put(session)

        others = [helpers.submit(drive) for _ in range(min(threads, len(order)) - 1)]
        try:
            drive()
        finally:
            for f in others:
                f.result()
