"""`loci eval heldout`: choose retrieval settings on some conversations, report them on the others.

    run_heldout(HeldoutConfig(dataset="locomo", candidates={"default": {}, "no-recency": {...}}))

1. The conversations that ask a kept question are split in two halves (`split`: the first half's ids,
   or the first half of them). Each candidate (a `retrieval` block merged into every request) is replayed on every
   conversation at the main budget (each conversation written once, `evals.replay_many`).
2. Two-way selection: the candidate with the best mean `metric` on half A is scored on half B, and the
   best on B is scored on A. The held-out figures pool the two: every conversation is scored under the
   setting chosen WITHOUT it.
3. The two chosen settings are replayed at every budget of `budgets` on their held-out halves: the
   held-out table per category and budget, and its plot.
The run directory holds config.json, selection.csv (every candidate on each half), heldout.csv,
report.md and recall_vs_budget.png.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from engine.errors import InvalidInput
from evals import plots
from evals.loaders import load_dataset
from evals.metrics import LOWER_IS_BETTER, RATE_COLUMNS, metrics_frame, score, summarize
from evals.replay import EngineBackend, ReplayConfig
from evals.replay_many import replay_many
from evals.run import RunConfig, check_questions, question_filter, select
from evals.rundir import (
    check_runs_dir,
    dataset_sha256,
    git_revision,
    markdown_table,
    new_run_dir,
    run_settings,
    write_json,
)

METRICS: tuple[str, ...] = ("recall_in_context_whole", "recall_in_context")


class HeldoutConfig(msgspec.Struct, frozen=True, kw_only=True):
    dataset: str = "locomo"
    ingest: Literal["facts", "events"] = "events"
    #: name -> the `retrieval` block of every request ({} = the engine's defaults)
    candidates: dict[str, dict[str, Any]] = msgspec.field(default_factory=lambda: {"default": {}})
    #: conversation ids of half A (empty: the first half of the dataset's conversations)
    split: tuple[str, ...] = ()
    budget: int = 1200
    budgets: tuple[int, ...] = (600, 1200, 2400)
    metric: str = "recall_in_context_whole"
    #: only these question categories (empty: every category with evidence; on LoCoMo its four)
    categories: tuple[str, ...] = ()
    embedder: str = "minilm"
    store: str = "memory"
    limit: int | None = None  # the first N conversations
    limit_questions: int | None = None  # the first N questions of each conversation


class HeldoutResult(msgspec.Struct, kw_only=True):
    config: HeldoutConfig
    halves: dict[str, list[str]]  # "A" / "B" -> conversation ids
    chosen: dict[str, str]  # half the choice was made on -> candidate name
    selection: Any  # DataFrame: candidate x half -> metric
    heldout: Any  # DataFrame: category x budget -> pooled held-out metric (chosen without the conversation)
    heldout_by_metric: dict[str, Any]
    dataset_sha256: str = ""
    run_dir: Path | None = None
    seconds: float = 0.0


def _run_config(config: HeldoutConfig, retrieval: Mapping[str, Any], budget: int) -> RunConfig:
    return RunConfig(
        dataset=config.dataset,
        ingest=config.ingest,
        retrieval=dict(retrieval) or None,
        budget=budget,
        rank_depth=0,
        embedder=config.embedder,
        store=config.store,
        categories=config.categories,
        baselines=False,
        limit=config.limit,
        limit_questions=config.limit_questions,
    )


def halves(conversation_ids: Sequence[str], split: Sequence[str]) -> dict[str, list[str]]:
    ids = list(conversation_ids)
    first = [c for c in ids if c in set(split)] if split else ids[: len(ids) // 2]
    unknown = set(split) - set(ids)
    if unknown:
        raise InvalidInput(f"unknown conversation id(s) in split: {sorted(unknown)}", field="split")
    second = [c for c in ids if c not in set(first)]
    if not first or not second:
        raise InvalidInput("both halves need at least one conversation", field="split")
    return {"A": first, "B": second}


def _replay(dataset: Any, config: HeldoutConfig, configs: Mapping[str, ReplayConfig]) -> Any:
    first = next(iter(configs.values()))
    keep = question_filter(_run_config(config, {}, config.budget))
    records = replay_many(
        dataset, EngineBackend(first), configs, questions=keep, limit_questions=config.limit_questions
    )
    return {name: metrics_frame(score(r) for r in recs) for name, recs in records.items()}


def run_heldout(
    config: HeldoutConfig, *, out_dir: str | Path | None = None, write: bool = True, dataset: Any = None
) -> HeldoutResult:
    import pandas as pd

    started = time.perf_counter()
    if config.metric not in RATE_COLUMNS:
        raise InvalidInput(f"unknown metric {config.metric!r}; valid: {list(RATE_COLUMNS)}", field="metric")
    if write:
        check_runs_dir(out_dir)
    base = _run_config(config, {}, config.budget)
    data = select(dataset if dataset is not None else load_dataset(config.dataset), base)
    check_questions(data, base)
    keep = question_filter(base)
    # only conversations that ask something: a half of others would have no score to choose by
    asked = {q.conversation_id for q in data.questions if keep(q)}
    silent = sorted(set(config.split) & {c.conversation_id for c in data.conversations} - asked)
    if silent:
        raise InvalidInput(f"conversation(s) in split ask no question of this run: {silent}", field="split")
    parts = halves(
        [c.conversation_id for c in data.conversations if c.conversation_id in asked], config.split
    )
    configs = {
        name: _run_config(config, block, config.budget).replay_config()
        for name, block in config.candidates.items()
    }
    frames = _replay(data, config, configs)
    rows = []
    for name, frame in frames.items():
        for half, ids in parts.items():
            rows.append(
                {
                    "candidate": name,
                    "half": half,
                    config.metric: float(frame[frame["conversation_id"].isin(ids)][config.metric].mean()),
                }
            )
    selection = pd.DataFrame(rows).pivot(index="candidate", columns="half", values=config.metric)
    best = "idxmin" if config.metric in LOWER_IS_BETTER else "idxmax"
    chosen = {half: str(getattr(selection[half], best)()) for half in parts}
    # score each half under the setting chosen on the other half, at every budget
    heldout_frames = []
    for chosen_on, scored_on in (("A", "B"), ("B", "A")):
        block = config.candidates[chosen[chosen_on]]
        budget_configs = {f"{b}": _run_config(config, block, b).replay_config() for b in config.budgets}
        sub = data.subset(parts[scored_on])
        for budget, frame in _replay(sub, config, budget_configs).items():
            heldout_frames.append(frame.assign(budget=int(budget)))
    pooled = pd.concat(heldout_frames, ignore_index=True)
    by_metric = {}
    for metric in dict.fromkeys((config.metric, *METRICS)):  # the chosen metric's table first
        table = {b: summarize(g, by="category")[metric] for b, g in pooled.groupby("budget")}
        frame = pd.DataFrame(table)
        frame.columns = [f"{b} tokens" for b in frame.columns]
        by_metric[metric] = frame
    result = HeldoutResult(
        config=config,
        halves=parts,
        chosen=chosen,
        selection=selection,
        heldout=by_metric[config.metric],
        heldout_by_metric=by_metric,
        dataset_sha256=dataset_sha256(data),
        seconds=time.perf_counter() - started,
    )
    if write:
        result.run_dir = write_heldout(result, out_dir)
    return result


def write_heldout(result: HeldoutResult, out_dir: str | Path | None = None) -> Path:
    c = result.config
    run_dir = new_run_dir(out_dir, f"heldout-{Path(c.dataset).stem}")
    revision = git_revision()
    write_json(
        run_dir / "config.json",
        {
            "heldout": c,
            "halves": result.halves,
            "chosen": result.chosen,
            "dataset_sha256": result.dataset_sha256,
            "settings": run_settings(),
            "git": revision,
            "seconds": round(result.seconds, 3),
        },
    )
    result.selection.to_csv(run_dir / "selection.csv")
    result.heldout.to_csv(run_dir / "heldout.csv")
    plots.save(
        plots.recall_vs_budget(result.heldout, ylabel=f"held-out {c.metric}"),
        run_dir / "recall_vs_budget.png",
    )
    lines = [
        f"# Held-out evaluation on `{c.dataset}` (ingest {c.ingest}, {c.embedder})",
        "",
        f"- half A: {', '.join(result.halves['A'])}",
        f"- half B: {', '.join(result.halves['B'])}",
        f"- chosen on A (scored on B): `{result.chosen['A']}`; chosen on B (scored on A): `{result.chosen['B']}`",
        f"- git `{revision.commit or 'unknown'}`; {result.seconds:.1f} s",
        "",
        f"## Every candidate on each half (`{c.metric}` at {c.budget} tokens)",
        "",
        markdown_table(result.selection),
        "",
    ]
    for metric, table in result.heldout_by_metric.items():
        lines += [f"## Held-out `{metric}` by category and budget", "", markdown_table(table), ""]
    lines += ["![recall_vs_budget.png](recall_vs_budget.png)", ""]
    (run_dir / "report.md").write_text("\n".join(lines))
    return run_dir


def print_heldout(result: HeldoutResult, out: Any) -> None:
    print(result.selection.to_string(float_format=lambda v: f"{v:.4f}"), file=out)
    print(
        f"\nchosen on A -> scored on B: {result.chosen['A']}; chosen on B -> scored on A: {result.chosen['B']}",
        file=out,
    )
    for metric, table in result.heldout_by_metric.items():
        print(f"\nheld-out {metric}:\n" + table.to_string(float_format=lambda v: f"{v:.3f}"), file=out)
    if result.run_dir is not None:
        print(f"\nwritten to {result.run_dir}", file=out)


__all__: Sequence[str] = ("HeldoutConfig", "HeldoutResult", "halves", "print_heldout", "run_heldout")
