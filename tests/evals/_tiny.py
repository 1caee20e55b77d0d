"""Small shared fixtures for the run / sweep / fit tests: a tiny synthetic dataset and a backend
that counts how often each conversation is written."""

from __future__ import annotations

from typing import Any

from evals.model import Conversation, Dataset, Question
from evals.replay import Answer, EngineBackend, Loaded, ReplayConfig
from evals.synthetic import SyntheticConfig, generate


def tiny_dataset(entities: int = 4, seed: int = 3) -> Dataset:
    return generate(SyntheticConfig(seed=seed, entities=entities, days=120, probes_per_entity=4))


class CountingBackend:
    """EngineBackend that records every load and every (config weights, question) asked."""

    def __init__(self, config: ReplayConfig) -> None:
        self.inner = EngineBackend(config)
        self.loads: list[str] = []
        self.asked: list[tuple[Any, str]] = []

    def load(self, conversation: Conversation, config: ReplayConfig) -> Loaded:
        self.loads.append(conversation.conversation_id)
        return self.inner.load(conversation, config)

    def ask(self, loaded: Loaded, question: Question, config: ReplayConfig) -> Answer:
        self.asked.append((config.weights, question.question_id))
        return self.inner.ask(loaded, question, config)

    def release(self, loaded: Loaded) -> None:
        self.inner.release(loaded)
