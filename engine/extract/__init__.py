"""Extractors by name: `rules` (deterministic, the default) and `llm` (an OpenAI-compatible chat
endpoint; falls back to `rules` and sets `degraded` when its reply is unusable).

    create_extractor("rules").extract("I moved to Lisbon last month", reference_time=t)
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from engine.errors import UnknownName
from engine.extract.base import Extractor, ExtractResult, FactDraft

#: name -> "module:attribute" of a factory (keyword arguments pass through)
EXTRACTORS: Mapping[str, str] = {
    "rules": "engine.extract.rules:RuleExtractor",
    "llm": "engine.extract.llm:LLMExtractor",
}


def create_extractor(name: str = "rules", **kwargs: Any) -> Extractor:
    target = EXTRACTORS.get(name)
    if target is None:
        raise UnknownName("extractor", name, EXTRACTORS, field="LOCI_EXTRACTOR")
    module_name, _, attr = target.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    extractor: Extractor = factory(**kwargs)
    return extractor


__all__ = ["EXTRACTORS", "ExtractResult", "Extractor", "FactDraft", "create_extractor"]
