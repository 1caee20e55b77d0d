"""Embedders behind one protocol, chosen by name: `minilm` (default), `openai`, `hash` (tests)."""

from engine.embed.base import Embedder
from engine.embed.registry import EMBEDDERS, create_embedder

__all__ = ["EMBEDDERS", "Embedder", "create_embedder"]
