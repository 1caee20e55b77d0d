"""minilm on onnxruntime: the graph written from the packaged weights, its cache, int8, and fallbacks."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.embed import onnx_encoder
from engine.embed.minilm import (
    BLOCKWISE_PROJECTIONS,
    INT8_PROJECTIONS,
    INT8_UNSMOOTHED,
    LONG_TEXT_CHARS,
    MiniLMEmbedder,
    _model_path,
    load_smoothing,
)
from engine.embed.onnx_encoder import OnnxEncoder
from engine.embed.onnx_graph import build_model
from engine.errors import Unavailable, UnknownName

pytestmark = pytest.mark.slow

TEXTS = [
    "Where does Alice live?",
    "a",
    "  Bob likes jazz and late-night radio  ",
    "The stock market fell sharply today",
    "Ünïcödé text 東京",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "x " * 400,
]  # the last is truncated at max_seq_length


@pytest.fixture(scope="module")
def torch_rows() -> np.ndarray:
    return MiniLMEmbedder(runtime="torch").embed(TEXTS)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


def test_fp32_graph_gives_the_torch_vectors(torch_rows: np.ndarray, cache: Path) -> None:
    emb = MiniLMEmbedder(runtime="onnx-fp32", cache_dir=cache)
    assert emb.active_runtime == "onnx-fp32"
    np.testing.assert_allclose(emb.embed(TEXTS), torch_rows, atol=1e-5)  # one padded batch
    one_by_one = np.vstack([emb.embed([t]) for t in TEXTS])  # the one-thread query session
    np.testing.assert_allclose(one_by_one, torch_rows, atol=1e-5)


def test_int8_graph_stays_within_tolerance(torch_rows: np.ndarray, cache: Path) -> None:
    emb = MiniLMEmbedder(runtime="onnx", cache_dir=cache)
    assert emb.active_runtime == "onnx" and INT8_PROJECTIONS
    rows = emb.embed(TEXTS)
    assert rows.shape == torch_rows.shape and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    cosine = (rows * torch_rows).sum(axis=1)
    assert cosine.min() >= 0.99, cosine
    assert not np.allclose(rows, torch_rows, atol=1e-4)  # int8 really ran


def test_sessions_keep_the_residual_layer_norms_unfused(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Add + LayerNormalization and Gelu, not onnxruntime's SkipLayerNormalization and BiasGelu fusions
    (slower on CPU): the session as the encoder opens it, saved after optimization, holds neither."""
    import onnx
    import onnxruntime as ort

    emb = MiniLMEmbedder(runtime="onnx", cache_dir=cache)
    emb.embed(TEXTS[:1])
    encoder = emb._encoder()
    assert encoder is not None
    saved = tmp_path / "optimized.onnx"
    real = ort.SessionOptions

    def saving() -> Any:
        opts = real()
        opts.optimized_model_filepath = str(saved)
        return opts

    monkeypatch.setattr(ort, "SessionOptions", saving)
    encoder._sessions.clear()
    encoder(TEXTS[:1])
    ops = [n.op_type for n in onnx.load(str(saved)).graph.node]
    assert "SkipLayerNormalization" not in ops and "BiasGelu" not in ops
    assert ops.count("LayerNormalization") == 12 and ops.count("Gelu") == 6
    assert ops.count("MatMulNBits") == len(BLOCKWISE_PROJECTIONS) == 3 and "MatMul" not in ops


def test_small_batches_of_long_texts_use_every_thread(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A question runs on one thread (concurrent queries share the cores); a conversation turn on
    `threads` (a single write waits for it), with the same vector either way."""
    emb = MiniLMEmbedder(runtime="onnx", threads=2, cache_dir=cache)
    encoder = emb._encoder()
    assert encoder is not None
    seen: list[int] = []
    real = MiniLMEmbedder._onnx_rows

    def spy(enc: OnnxEncoder, texts: list[str], threads: int) -> np.ndarray:
        seen.append(threads)
        return real(enc, texts, threads)

    monkeypatch.setattr(emb, "_onnx_rows", spy)
    turn = "Caroline: " + "I went to the support group yesterday and it was so powerful, honestly. " * 2
    assert len(turn) >= LONG_TEXT_CHARS > len(TEXTS[0])
    short, long = emb.embed([TEXTS[0]]), emb.embed([turn])
    assert seen == [1, 2]
    np.testing.assert_allclose(short, encoder([TEXTS[0]], threads=2), atol=1e-5)
    np.testing.assert_allclose(long, encoder([turn], threads=1), atol=1e-5)


def test_large_batches_are_put_back_in_order(cache: Path) -> None:
    emb = MiniLMEmbedder(runtime="onnx-fp32", cache_dir=cache)
    texts = [f"memory number {i} " + "word " * (i % 37) for i in range(80)]
    batched = emb.embed(texts)
    singles = np.vstack([emb.embed([t]) for t in texts[::7]])
    np.testing.assert_allclose(batched[::7], singles, atol=1e-5)


def test_a_text_has_one_int8_vector_whatever_it_is_embedded_with(cache: Path) -> None:
    """The int8 products scale their activations once per pass, so a pass shared with other texts
    would move a text's vector (cosine ~0.99 to its vector alone): the vector a turn is stored with
    would depend on its batch, or on the query an assemble embeds it with. Each text runs alone: the
    same bits alone, in a small batch, in a large batch on the lanes, in any order, and when
    concurrent query calls are merged."""
    from concurrent.futures import ThreadPoolExecutor

    emb = MiniLMEmbedder(runtime="onnx", threads=2, cache_dir=cache)
    turn = "Caroline: I went to the LGBTQ support group yesterday and it was so powerful."
    long = "Melanie: " + "pottery and painting and camping with the kids, then swimming. " * 4
    assert len(long) >= LONG_TEXT_CHARS > len(turn)
    others = _turns(40, salt="other ")
    for text in (turn, long):
        alone = emb.embed([text])[0]
        for batch in ([text, "ok"], ["Where does she live?", text], [*others, text], [text, *others[::-1]]):
            row = emb.embed(batch)[batch.index(text)]
            np.testing.assert_array_equal(row, alone)
        with ThreadPoolExecutor(4) as pool:
            merged = list(pool.map(lambda t: emb.embed([t])[0], [text, *others[:7]] * 2))
        np.testing.assert_array_equal(merged[0], alone)
        np.testing.assert_array_equal(merged[8], alone)


def _turns(n: int, salt: str = "") -> list[str]:
    return [f"{salt}Caroline: turn {i} " + "about the support group " * (i % 9) for i in range(n)]


@pytest.fixture(scope="module")
def int8_encoder(cache: Path) -> OnnxEncoder:
    encoder = MiniLMEmbedder(runtime="onnx", cache_dir=cache)._encoder()
    assert encoder is not None
    return encoder


def test_large_batches_share_their_texts_among_lanes(int8_encoder: OnnxEncoder) -> None:
    """With two threads a large batch runs on two one-thread lane sessions side by side (not on the
    sessions queries use), and gives the rows the one-thread pass gives."""
    texts = _turns(60)
    alone = int8_encoder(texts, threads=1)
    used: list[int] = []
    real = int8_encoder._run

    def spy(session: Any, ids: Any) -> np.ndarray:
        used.append(id(session))
        return real(session, ids)

    int8_encoder._run = spy  # type: ignore[method-assign]
    try:
        lanes = int8_encoder(texts, threads=2)
    finally:
        del int8_encoder._run
    assert len(set(used)) == int8_encoder._lane_count == 2
    assert not set(used) & {id(s) for s, _ in int8_encoder._sessions.values()}
    np.testing.assert_array_equal(lanes, alone)


def test_every_session_shares_one_copy_of_the_word_embeddings(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query, long-text and lane sessions all take the word embeddings (the graph's one large
    initializer) from the encoder's single copy, and give the rows an unshared session gives."""
    import onnxruntime as ort

    given: list[tuple[str, int]] = []

    class Recording(ort.SessionOptions):  # type: ignore[misc]
        def add_initializer(self, name: str, value: Any) -> None:
            given.append((name, id(value)))
            super().add_initializer(name, value)

    monkeypatch.setattr(ort, "SessionOptions", Recording)
    encoder = MiniLMEmbedder(runtime="onnx", cache_dir=cache)._encoder()
    assert encoder is not None
    texts = _turns(40)
    lanes = encoder(texts, threads=2)
    encoder(texts[:2], threads=2)
    assert len(given) == 4  # the eager one-thread session, two lanes, the two-thread session
    assert {name for name, _ in given} == {"word"} and len({ident for _, ident in given}) == 1
    unshared = OnnxEncoder(Path(_model_path()), encoder.graph)
    unshared._shared = {}  # every session with its own copy, as before
    np.testing.assert_allclose(lanes, unshared(texts, threads=2), atol=1e-6)


def test_concurrent_batches_on_lanes_keep_their_own_rows(int8_encoder: OnnxEncoder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    batches = [_turns(30 + k, salt=f"batch {k}. ") for k in range(4)]
    expected = [int8_encoder(b, threads=1) for b in batches]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda b: int8_encoder(b, threads=2), batches))
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_allclose(g, e, atol=1e-6)


def test_a_failing_pass_on_a_lane_raises_and_gives_its_lane_back(int8_encoder: OnnxEncoder) -> None:
    texts = _turns(60)
    int8_encoder(texts, threads=2)
    real = int8_encoder._run
    calls: list[int] = []

    def failing(session: Any, ids: Any) -> np.ndarray:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("pass failed")
        return real(session, ids)

    int8_encoder._run = failing  # type: ignore[method-assign]
    try:
        with pytest.raises(RuntimeError, match="pass failed"):
            int8_encoder(texts, threads=2)
    finally:
        del int8_encoder._run
    assert int8_encoder._lanes.qsize() == int8_encoder._lane_count == 2
    np.testing.assert_allclose(int8_encoder(texts, threads=2), int8_encoder(texts, threads=1), atol=1e-6)


def test_a_pass_begun_gives_the_rows_of_a_pass_run_here(int8_encoder: OnnxEncoder) -> None:
    """`begin` (the query's pass on onnxruntime's thread, beside the caller's work) gives each text the
    vector the one-thread pass gives, in the texts' order."""
    texts = ["What did Caroline research?", _turns(4)[3], "ok"]
    embedder = MiniLMEmbedder(runtime="onnx", cache_dir=int8_encoder.graph.parent)  # type: ignore[union-attr]
    np.testing.assert_array_equal(embedder.begin(texts).result(timeout=60), int8_encoder(texts, threads=1))
    one = MiniLMEmbedder(runtime="onnx", cache_dir=int8_encoder.graph.parent, threads=1)  # type: ignore[union-attr]
    held = one.begin(texts)  # held to one thread: embedded here and now, no pool thread
    assert held.done() and 2 not in (one._encoder() or int8_encoder)._sessions
    np.testing.assert_array_equal(held.result(), int8_encoder(texts, threads=1))
    np.testing.assert_array_equal(
        int8_encoder.begin(texts).result(timeout=60), int8_encoder(texts, threads=1)
    )


def test_passes_begun_at_once_from_many_threads_keep_their_own_rows(int8_encoder: OnnxEncoder) -> None:
    """Requests begin their queries' passes on one session concurrently (the server's request threads):
    each Future holds its own texts' rows."""
    from concurrent.futures import ThreadPoolExecutor

    queries = [[f"question {k} about the support group?", f"turn {k}: " + "so much " * k] for k in range(12)]
    expected = [int8_encoder(q, threads=1) for q in queries]
    with ThreadPoolExecutor(6) as pool:
        begun = list(pool.map(int8_encoder.begin, queries))
    for e, b in zip(expected, begun, strict=True):
        np.testing.assert_array_equal(b.result(timeout=60), e)


def test_a_failing_pass_begun_fails_its_future_as_unavailable(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    embedder = MiniLMEmbedder(runtime="onnx", cache_dir=cache)
    encoder = embedder._encoder()
    assert encoder is not None

    class Failing:
        def run_async(self, names: Any, feed: Any, callback: Any, user_data: Any) -> None:
            threading.Thread(target=callback, args=(None, user_data, "device lost")).start()

    monkeypatch.setattr(encoder, "_session", lambda threads: (Failing(), threading.Lock()))
    with pytest.raises(Unavailable, match="device lost"):
        embedder.begin(["a question"]).result(timeout=10)


def test_the_graph_is_cached_per_weights_and_quantization(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_dir = Path(_model_path())
    first = onnx_encoder.graph_file(model_dir, cache, "t", ())
    assert isinstance(first, Path) and first.is_file() and oct(first.stat().st_mode & 0o777) == "0o644"
    built: list[int] = []
    real = onnx_encoder._build_bytes

    def counted(*a: Any) -> bytes:
        built.append(1)
        return real(*a)

    monkeypatch.setattr(onnx_encoder, "_build_bytes", counted)
    assert onnx_encoder.graph_file(model_dir, cache, "t", ()) == first and not built  # read, not rebuilt
    other = onnx_encoder.graph_file(model_dir, cache, "t", ("l0.qkv",))
    assert other != first and built == [1]
    assert not list(cache.glob("*.tmp"))


def test_an_unwritable_cache_builds_in_memory(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    graph = onnx_encoder.graph_file(Path(_model_path()), blocked / "models", "t", ())
    assert isinstance(graph, bytes)
    encoder = OnnxEncoder(Path(_model_path()), graph)
    assert encoder(["hello"]).shape == (1, 384)


def test_falls_back_to_torch_without_onnxruntime(
    monkeypatch: pytest.MonkeyPatch, torch_rows: np.ndarray, tmp_path: Path
) -> None:
    real_import = builtins.__import__

    def no_ort(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "onnxruntime":
            raise ImportError("no onnxruntime here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ort)
    emb = MiniLMEmbedder(runtime="onnx", cache_dir=tmp_path)
    assert emb.active_runtime == "torch"
    np.testing.assert_allclose(emb.embed(TEXTS[:2]), torch_rows[:2], atol=1e-5)


def test_falls_back_to_torch_when_the_runtime_cannot_load_the_graph(
    monkeypatch: pytest.MonkeyPatch, torch_rows: np.ndarray, tmp_path: Path
) -> None:
    """An onnxruntime too old for an operator of the graph fails when the encoder opens, not at every
    embed: the embedder runs on torch instead."""
    import onnxruntime as ort

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Only 4b quantization is supported for MatMulNBits op")

    monkeypatch.setattr(ort, "InferenceSession", refuse)
    emb = MiniLMEmbedder(runtime="onnx", cache_dir=tmp_path)
    assert emb.active_runtime == "torch"
    np.testing.assert_allclose(emb.embed(TEXTS[:2]), torch_rows[:2], atol=1e-5)


def test_unsupported_model_directories_are_refused(tmp_path: Path) -> None:
    assert not onnx_encoder.supported(tmp_path)
    assert OnnxEncoder.open(tmp_path, tmp_path / "cache", name="x") is None


def test_runtime_names_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCI_MINILM_RUNTIME", "tensorflow")
    with pytest.raises(UnknownName):
        MiniLMEmbedder()
    monkeypatch.setenv("LOCI_MINILM_RUNTIME", "torch")
    assert MiniLMEmbedder().runtime == "torch"


def test_cache_dir_follows_the_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from engine.embed.registry import create_embedder

    monkeypatch.delenv("LOCI_MODEL_CACHE", raising=False)
    emb = create_embedder("minilm", data_dir=str(tmp_path))
    assert isinstance(emb, MiniLMEmbedder) and emb.cache_dir == tmp_path / "models"
    monkeypatch.setenv("LOCI_MODEL_CACHE", os.fspath(tmp_path / "elsewhere"))
    assert MiniLMEmbedder(data_dir=str(tmp_path)).cache_dir == tmp_path / "elsewhere"


def test_the_shipped_smoothing_belongs_to_the_packaged_weights(tmp_path: Path) -> None:
    """The factors apply only to the weights they were calibrated on; other weights run unsmoothed."""
    weights = Path(_model_path()) / "model.safetensors"
    factors = load_smoothing(weights)
    assert factors is not None and set(factors) == {f"l{i}.ffn_in" for i in range(6)}
    assert all(f.shape == (384,) and (f > 0).all() for f in factors.values())
    other = tmp_path / "other.safetensors"
    other.write_bytes(b"not the packaged weights")
    assert load_smoothing(other) is None
    assert load_smoothing(weights, tmp_path / "missing.json") is None
    assert set(INT8_PROJECTIONS) - set(INT8_UNSMOOTHED) == {"l0.ffn_in", "l1.ffn_in", "l2.ffn_in"}


def test_smoothing_keeps_the_product_and_the_precision(torch_rows: np.ndarray, cache: Path) -> None:
    """x / s times s-scaled weight rows is the same product, and the int8 feed-forward inputs of the first
    layers come closer to the float32 vectors with the shipped factors than without them."""
    model_dir = Path(_model_path())
    factors = load_smoothing(model_dir / "model.safetensors")
    assert factors is not None

    def cosines(smooth: Any) -> np.ndarray:
        enc = OnnxEncoder.open(model_dir, cache, name="s", quantize=INT8_PROJECTIONS, smooth=smooth)
        assert enc is not None
        out: np.ndarray = (enc(TEXTS) * torch_rows).sum(axis=1)
        return out

    smoothed, plain = cosines(factors), cosines(None)
    assert smoothed.min() >= 0.99, smoothed
    assert smoothed.mean() > plain.mean() and smoothed.min() > plain.min(), (smoothed, plain)


def test_smoothing_is_refused_where_it_cannot_apply() -> None:
    from safetensors.numpy import load_file

    weights = load_file(str(Path(_model_path()) / "model.safetensors"))
    s = np.ones(384, dtype=np.float32)
    with pytest.raises(ValueError, match="quantized matmul"):
        build_model(weights, heads=12, eps=1e-12, quantize=(), smooth={"l0.ffn_in": s})
    with pytest.raises(ValueError, match="quantized matmul"):
        build_model(weights, heads=12, eps=1e-12, quantize=("l0.qkv",), smooth={"l0.qkv": s})


def test_a_blockwise_projection_keeps_the_product() -> None:
    """MatMulNBits with the packed 8-bit blocks (a row count that is not a whole number of blocks, a bias)
    gives x @ w + b to int8 precision, with one outlier token that a per-call scale would flatten."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from engine.embed.onnx_graph import BLOCK, MS, _Graph

    rng = np.random.default_rng(3)
    k, n = BLOCK * 2 + 44, 96
    w = rng.normal(size=(k, n)).astype(np.float32)
    b = rng.normal(size=n).astype(np.float32)
    x = rng.normal(size=(2, 5, k)).astype(np.float32)
    x[1, 2] *= 200.0
    g = _Graph()
    g.matmul("x", w, "y", False, bias=b, blockwise=True)
    graph = helper.make_graph(
        g.nodes,
        "t",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "t", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", "t", n])],
        g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"x": x})[0]
    want = x @ w + b
    assert [n.op_type for n in g.nodes] == ["MatMulNBits"]
    for row_got, row_want in zip(got.reshape(-1, n), want.reshape(-1, n), strict=True):
        # every token keeps its own precision, the outlier's neighbours too
        assert np.abs(row_got - row_want).max() <= 0.02 * np.abs(row_want).max()


def test_blockwise_is_refused_where_it_cannot_apply() -> None:
    from safetensors.numpy import load_file

    weights = load_file(str(Path(_model_path()) / "model.safetensors"))
    for quantize, blockwise in (((), ("l0.qkv",)), (("l0.ffn_out",), ("l0.ffn_out",)), ((), ("l9.ffn_out",))):
        with pytest.raises(ValueError, match="blockwise"):
            build_model(weights, heads=12, eps=1e-12, quantize=quantize, blockwise=blockwise)
