"""Replay a dataset once and ask every question under several retrieval configurations.

    replay_many(dataset, backend, {"chosen": cfg, "bm25-only": cfg_b, ...})
        -> {"chosen": [QuestionRecord, ...], "bm25-only": [...], ...}

Each conversation is written into the backend ONCE (turn by turn, in time order, each turn's date
as its timestamp; see `evals.replay`), then every question is asked under every configuration with
`as_of` = the question's time, and the conversation is released. Only retrieval options may differ
between the configurations (preset, normalization, weights, half-life, budget, rank depth); what the
write path depends on (extract, embedder, store, write) must be the same, else `InvalidInput`.
Sweeps, baselines and budget curves use this, so the expensive part (embedding and extraction) is
paid once per conversation whatever the number of configurations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import msgspec

from engine.errors import InvalidInput
from evals.metrics import QuestionRecord
from evals.model import Dataset, Question
from evals.replay import Backend, ReplayConfig, to_record

#: ReplayConfig fields that shape what is written (the same for every configuration of one replay)
WRITE_FIELDS: tuple[str, ...] = ("extract", "embedder", "store", "write")

#: all five channel weights of `engine.retrieval.presets`; sweeps and baselines set every one explicitly,
#: because a weight left out of a request takes the preset's value
CHANNELS: tuple[str, ...] = ("semantic", "bm25", "graph_prior", "recency_decay", "confidence")


def full_weights(weights: Mapping[str, float]) -> dict[str, float]:
    """Every channel named, the missing ones at 0 (an unknown channel raises `InvalidInput`)."""
    unknown = sorted(set(weights) - set(CHANNELS))
    if unknown:
        raise InvalidInput(f"unknown channel(s) {unknown}; valid: {list(CHANNELS)}", field="weights")
    return {c: float(weights.get(c, 0.0)) for c in CHANNELS}


def check_write_compatible(configs: Mapping[str, ReplayConfig]) -> ReplayConfig:
    """The configuration used for writing (the first); raises when another writes differently."""
    if not configs:
        raise InvalidInput("no configuration to replay", field="configs")
    first_name, first = next(iter(configs.items()))
    for name, config in configs.items():
        for field in WRITE_FIELDS:
            if getattr(config, field) != getattr(first, field):
                raise InvalidInput(
                    f"configurations {first_name!r} and {name!r} differ in {field!r}; only retrieval "
                    "options may differ within one replay",
                    field=field,
                )
    return first


def replay_many(
    dataset: Dataset,
    backend: Backend,
    configs: Mapping[str, ReplayConfig],
    *,
    questions: Callable[[Question], bool] | None = None,
    progress: bool = False,
    limit_questions: int | None = None,
) -> dict[str, list[QuestionRecord]]:
    """Records per configuration name, in dataset order. `limit_questions` caps the questions asked
    per conversation (the first ones), for quick runs."""
    write_config = check_write_compatible(configs)
    plan: list[tuple[int, list[Question]]] = []
    for i, conversation in enumerate(dataset.conversations):
        asked = [
            q
            for q in dataset.questions_for(conversation.conversation_id)
            if questions is None or questions(q)
        ]
        if limit_questions is not None:
            asked = asked[:limit_questions]
        if asked:
            plan.append((i, asked))
    out: dict[str, list[QuestionRecord]] = {name: [] for name in configs}
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=sum(len(a) for _, a in plan) * len(configs), unit="q", desc=dataset.name)
    try:
        for i, asked in plan:
            conversation = dataset.conversations[i]
            loaded = backend.load(conversation, write_config)
            try:
                for name, config in configs.items():
                    for question in asked:
                        answer = backend.ask(loaded, question, config)
                        out[name].append(to_record(question, conversation, loaded, answer))
                        if bar is not None:
                            bar.update(1)
            finally:
                backend.release(loaded)
    finally:
        if bar is not None:
            bar.close()
    return out


def with_options(base: ReplayConfig, **changes: object) -> ReplayConfig:
    """`base` with some retrieval options replaced (weights are completed with zeros)."""
    weights = changes.get("weights")
    if isinstance(weights, Mapping):
        changes["weights"] = full_weights(weights)
    return msgspec.structs.replace(base, **changes)


__all__: Sequence[str] = (
    "CHANNELS",
    "check_write_compatible",
    "full_weights",
    "replay_many",
    "with_options",
)
