"""Embedder registry: a name maps to a factory; an unknown name lists the valid ones.

Factories import their heavy dependencies lazily, so `hash` needs neither torch nor network.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping

from engine.embed.base import Embedder
from engine.envnum import env_http_url, env_number, env_whole
from engine.errors import UnknownName

#: name -> "module:attribute" of a zero-argument factory (reads its own LOCI_* settings)
EMBEDDERS: Mapping[str, str] = {
    "minilm": "engine.embed.minilm:MiniLMEmbedder",
    "openai": "engine.embed.openai:OpenAIEmbedder",
    "hash": "engine.embed.hash:HashEmbedder",
}


#: the MiniLM embedder's runtimes (`LOCI_MINILM_RUNTIME`; `engine.embed.minilm`), named here so a
#: setting can be checked without loading one
MINILM_RUNTIMES: tuple[str, ...] = ("onnx", "onnx-fp32", "torch")
#: threads for MiniLM's larger batches (`engine.embed.minilm`)
TORCH_THREADS_ENV = "LOCI_TORCH_THREADS"
#: the openai embedder's request timeout in seconds and expected dimension (`engine.embed.openai`)
EMBED_TIMEOUT_ENV = "LOCI_EMBED_TIMEOUT"
EMBED_DIM_ENV = "LOCI_EMBED_DIM"
EMBED_URL_ENV = "LOCI_EMBED_URL"


def check_embedder(name: str, env: Mapping[str, str]) -> None:
    """UnknownName for an embedder name, or a MiniLM runtime in `env`, that `create_embedder` would refuse,
    InvalidInput for a number in `env` it would not read (a server checks at start, not at its first read)."""
    if name not in EMBEDDERS:
        raise UnknownName("embedder", name, EMBEDDERS, field="LOCI_EMBEDDER")
    runtime = env.get("LOCI_MINILM_RUNTIME")
    if name == "minilm" and runtime and runtime not in MINILM_RUNTIMES:
        raise UnknownName("minilm runtime", runtime, MINILM_RUNTIMES, field="LOCI_MINILM_RUNTIME")
    if name == "minilm":
        env_whole(env, TORCH_THREADS_ENV, 1, low=1)
    if name == "openai":
        env_http_url(env, EMBED_URL_ENV)
        env_number(env, EMBED_TIMEOUT_ENV, 10.0, positive=True)
        env_whole(env, EMBED_DIM_ENV, 0)


def create_embedder(name: str, *, data_dir: str | None = None) -> Embedder:
    """The embedder `name`; `data_dir` is where embedders that cache files (minilm's exported graph) keep
    them, for factories that take it."""
    target = EMBEDDERS.get(name)
    if target is None:
        raise UnknownName("embedder", name, EMBEDDERS, field="LOCI_EMBEDDER")
    module_name, _, attr = target.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    takes_dir = data_dir is not None and "data_dir" in inspect.signature(factory).parameters
    embedder: Embedder = factory(data_dir=data_dir) if takes_dir else factory()
    return embedder
