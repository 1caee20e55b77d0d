"""Retrieval presets: named, documented data, defined with every other retrieval default in
`loci.wire.tuning` (`TUNING`; its docstring has the table). A preset sets the channel weights and the
retrieval knobs a request leaves unset; anything the request sets explicitly (weights, top_k, depth,
half-life, rerank) wins over the preset. `balanced` holds the API's documented defaults.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.errors import UnknownName
from loci.wire.tuning import TUNING, Preset
from loci.wire.tuning import PresetName as PresetName
from loci.wire.tuning import Weights as Weights

CHANNELS: tuple[str, ...] = ("semantic", "bm25", "graph_prior", "recency_decay", "confidence")
PRESETS: Mapping[str, Preset] = TUNING.presets
DEFAULT_PRESET = TUNING.default_preset

__all__ = ["CHANNELS", "DEFAULT_PRESET", "PRESETS", "Preset", "PresetName", "Weights", "get_preset"]


def get_preset(name: str) -> Preset:
    preset = PRESETS.get(name)
    if preset is None:
        raise UnknownName("preset", name, PRESETS, field="retrieval.preset")
    return preset
