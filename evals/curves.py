"""Recall against token budget, per preset: how much evidence reaches the context as the budget grows.

    budget_curve(dataset, presets=("balanced", "fast"), budgets=(256, 600, 1200)) -> DataFrame
        columns: config, preset, budget, n, recall_in_context, utilization, evidence_token_share,
                 supersession_correct, overflow_count

Each conversation is written once; every (preset, budget) pair is asked on it (`evals.replay_many`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from evals.metrics import metrics_frame, score, summarize
from evals.model import Dataset, Question
from evals.replay import Backend, EngineBackend, ReplayConfig, evidence_questions
from evals.replay_many import replay_many

CURVE_COLUMNS: tuple[str, ...] = (
    "recall_in_context",
    "utilization",
    "evidence_token_share",
    "supersession_correct",
    "overflow_count",
)


def budget_curve(
    dataset: Dataset,
    presets: Sequence[str] = ("balanced",),
    budgets: Sequence[int] = (256, 600, 1200, 2400),
    *,
    base: ReplayConfig | None = None,
    backend: Backend | None = None,
    questions: Callable[[Question], bool] | None = evidence_questions,
    limit_questions: int | None = None,
    progress: bool = False,
) -> Any:
    import pandas as pd

    cfg = base or ReplayConfig(rank_depth=0)
    configs = {
        f"{preset}@{budget}": msgspec.structs.replace(cfg, preset=preset, budget=budget, rank_depth=0)
        for preset in presets
        for budget in budgets
    }
    records = replay_many(
        dataset,
        backend or EngineBackend(cfg),
        configs,
        questions=questions,
        progress=progress,
        limit_questions=limit_questions,
    )
    rows = []
    for name, recs in records.items():
        preset, _, budget = name.rpartition("@")
        summary = summarize(metrics_frame(score(r) for r in recs), by=None).loc["all"]
        row: dict[str, Any] = {
            "config": preset,
            "preset": preset,
            "budget": int(budget),
            "n": int(summary["n"]),
        }
        row.update({col: float(summary[col]) for col in CURVE_COLUMNS})
        rows.append(row)
    return pd.DataFrame(rows, columns=["config", "preset", "budget", "n", *CURVE_COLUMNS])


__all__: Sequence[str] = ("CURVE_COLUMNS", "budget_curve")
