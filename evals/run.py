"""`loci eval run`: replay a dataset under one configuration and the two baselines, score it, and
write a run directory.

    run_eval(RunConfig(dataset="locomo", preset="balanced"), progress=True) -> RunResult

The chosen configuration is replayed next to `bm25-only` (weights {bm25: 1}, every other channel 0)
and `semantic-only` ({semantic: 1}) on the same stores: each conversation is written once (turn by
turn in time order, each turn's date as its timestamp) and each question is asked under every
configuration with `as_of` = the question's time (see `evals.replay_many`).

`evals/runs/<run-id>/` holds:
    config.json      the RunConfig (never the API key), the resolved ReplayConfigs, git revision
    questions.jsonl  one line per (configuration, question): its metrics, evidence and top ranks
    summary.json     per configuration: the summary table by category, and latency per stage
    report.md        markdown tables and the PNG plots below
    recall_at_k.png, recall_in_context_by_category.png, utilization.png
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

import msgspec

from engine.errors import InvalidInput
from evals import plots
from evals.latest_evidence import latest_evidence_table
from evals.loaders import load_dataset
from evals.metrics import QuestionRecord, latency_table, metrics_frame, score, summarize
from evals.model import Dataset, Question
from evals.replay import (
    Backend,
    EngineBackend,
    HttpBackend,
    ReplayConfig,
    check_base_url,
    check_config,
    evidence_questions,
    weights_used,
)
from evals.replay_many import full_weights, replay_many
from evals.rundir import (
    check_runs_dir,
    dataset_sha256,
    git_revision,
    markdown_table,
    new_run_dir,
    run_settings,
    write_json,
)

CHOSEN = "chosen"
BASELINES: Mapping[str, dict[str, float]] = {
    "bm25-only": full_weights({"bm25": 1.0}),
    "semantic-only": full_weights({"semantic": 1.0}),
}
#: the columns of the printed summary table
SUMMARY_COLUMNS: tuple[str, ...] = (
    "n",
    "recall_at_5",
    "recall_at_10",
    "recall_at_50",
    "mrr",
    "ndcg_at_10",
    "recall_in_context",
    "recall_in_context_whole",
    "supersession_correct",
    "stale_leak",
    "false_supersession",
    "overflow_count",
    "utilization",
    "evidence_token_share",
)


#: `--ingest events`: questions are asked this long after their conversation's last session
EVENTS_QUESTION_DELAY = timedelta(days=1)
#: `--ingest events`: `return.max_events` unless given (the budget, not the count, bounds the context)
EVENTS_MAX_EVENTS = 200


class RunConfig(msgspec.Struct, frozen=True, kw_only=True):
    dataset: str = "synthetic"
    preset: str | None = None
    normalization: str = "minmax"
    weights: dict[str, float] | None = None
    recency_half_life_days: int | None = None
    #: more `retrieval` options for every request (JSON object, e.g. {"top_k": 48})
    retrieval: dict[str, Any] | None = None
    budget: int = 1200
    #: more budgets the chosen configuration is also replayed at (configurations `chosen@<budget>`)
    budgets: tuple[int, ...] = ()
    tokenizer: str | None = None  # budget.tokenizer; None: the API default
    #: `facts`: turns as events plus the facts the extractor finds in them; `events`: turns as events
    #: only, no extraction, `return.max_events` 200 unless `max_events` is given; `agent`: every turn
    #: through assemble with the API's default ingest (the agent loop), questions with the API's default
    #: `return` unless `max_events`/`max_facts` are given. In `events` and `agent`, LoCoMo's questions
    #: (the dataset gives them no time) are asked one day after the conversation's last session
    ingest: Literal["facts", "events", "agent"] = "facts"
    max_events: int | None = None
    max_facts: int | None = None
    rank_depth: int = 50
    limit: int | None = None  # the first N conversations
    limit_questions: int | None = None  # the first N questions of each conversation
    conversations: tuple[str, ...] = ()  # only these conversation ids
    categories: tuple[str, ...] = ()  # only these question categories
    embedder: str = "hash"
    store: str = "memory"
    extract: bool = True
    baselines: bool = True
    #: more presets to compare on the same stores (each a configuration named `preset:<name>`)
    compare_presets: tuple[str, ...] = ()
    http_url: str | None = None

    def replay_config(self, weights: dict[str, float] | None = None) -> ReplayConfig:
        events = self.ingest == "events"
        return ReplayConfig(
            preset=self.preset,
            normalization=self.normalization,
            weights=weights if weights is not None else self.weights,
            recency_half_life_days=self.recency_half_life_days,
            retrieval=self.retrieval,
            budget=self.budget,
            tokenizer=self.tokenizer,
            rank_depth=self.rank_depth,
            max_events=self.max_events if self.max_events is not None or not events else EVENTS_MAX_EVENTS,
            max_facts=self.max_facts,
            extract=self.extract and self.ingest == "facts",
            embedder=self.embedder,
            store=self.store,
            write="agent" if self.ingest == "agent" else "batch",
        )

    def label(self) -> str:
        name = (
            Path(self.dataset).stem if "/" in self.dataset or self.dataset.endswith(".json") else self.dataset
        )
        return f"{name}-{self.preset or 'balanced'}"


class RunResult(msgspec.Struct, kw_only=True):
    config: RunConfig
    run_dir: Path | None
    summaries: dict[str, Any]  # configuration name -> summary DataFrame (by category + `all`)
    latency: dict[str, Any]  # configuration name -> latency DataFrame
    frames: dict[str, Any]  # configuration name -> per-question metrics DataFrame
    #: per configuration: newest-evidence-in-context rates (`evals.latest_evidence`); empty when
    #: no question has evidence at two distinct times
    latest: Any = None
    seconds: float = 0.0
    #: conversations written and asked (one none of whose questions is kept is skipped)
    conversations: int = 0


def configurations(config: RunConfig) -> dict[str, ReplayConfig]:
    """The chosen configuration first, then it at the other budgets, then the compared presets, then the
    baselines (when asked for)."""
    out = {CHOSEN: config.replay_config()}
    for budget in config.budgets:
        if budget != config.budget:
            out[f"{CHOSEN}@{budget}"] = msgspec.structs.replace(config.replay_config(), budget=budget)
    for preset in config.compare_presets:
        # the preset as shipped: its own weights and half-life, not the chosen run's tuning of them
        compared = msgspec.structs.replace(
            config.replay_config(), preset=preset, weights=None, recency_half_life_days=None
        )
        out[f"preset:{preset}"] = _without(compared, "preset", "weights", "recency_half_life_days")
    if config.baselines:
        for name, weights in BASELINES.items():
            out[name] = _without(config.replay_config(weights), "weights")
    return out


def _without(config: ReplayConfig, *keys: str) -> ReplayConfig:
    """`config` less `keys` of its `retrieval` block, which is merged last and would override them."""
    if not config.retrieval or not set(keys) & set(config.retrieval):
        return config
    rest = {k: v for k, v in config.retrieval.items() if k not in keys}
    return msgspec.structs.replace(config, retrieval=rest or None)


def select(dataset: Dataset, config: RunConfig) -> Dataset:
    """The conversations the run covers: `conversations` ids, then the first `limit`."""
    if config.conversations:
        missing = set(config.conversations) - {c.conversation_id for c in dataset.conversations}
        if missing:
            raise InvalidInput(f"unknown conversation id(s): {sorted(missing)}", field="conversations")
        dataset = dataset.subset(list(config.conversations))
    if config.limit is not None:
        dataset = dataset.limit(config.limit)
    if config.ingest in ("events", "agent") and dataset.name == "locomo":  # LoCoMo gives no question time
        dataset = dataset.asked_after_last_session(EVENTS_QUESTION_DELAY)
    return dataset


class QuestionSelection(Protocol):
    """What picks a command's questions: run, sweep, fit and heldout configurations all have it."""

    @property
    def categories(self) -> tuple[str, ...]: ...

    @property
    def limit_questions(self) -> int | None: ...


def check_questions(data: Dataset, config: QuestionSelection) -> None:
    """InvalidInput when a category asked for is not the dataset's or has no question to score, or the
    run would ask nothing."""
    known = {q.category for q in data.questions}
    unknown = sorted(set(config.categories) - known)
    if unknown:
        raise InvalidInput(
            f"unknown question categories {unknown}; the conversations run have {sorted(known)}",
            field="categories",
        )
    keep = question_filter(config)
    if config.limit_questions == 0 or not any(keep(q) for q in data.questions):
        raise InvalidInput("the run would ask no question: check --limit, --limit-questions and --categories")
    unscored = sorted(set(config.categories) - {q.category for q in data.questions if keep(q)})
    if unscored:  # else they would be left out of the run without a word
        raise InvalidInput(
            f"question categories {unscored} have no question with evidence or gold values to score",
            field="categories",
        )


def question_filter(config: QuestionSelection) -> Callable[[Question], bool]:
    categories = set(config.categories)

    def keep(q: Question) -> bool:
        return evidence_questions(q) and (not categories or q.category in categories)

    return keep


LOCAL_API = "local"  # `--http local`: the real app in process (evals.local_api), replayed over HTTP


@contextlib.contextmanager
def open_backend(config: RunConfig, api_key: str | None = None) -> Iterator[Backend]:
    """The backend a run replays through; `http_url == "local"` serves the app in process for the run
    (on a fresh store of the run's `store` target, the run's embedder behind the eval vector cache)."""
    if config.http_url != LOCAL_API:
        yield make_backend(config, api_key)
        return
    from evals.local_api import start_local_api
    from evals.vector_cache import cached_embedder

    with start_local_api(org="eval", embedder=cached_embedder(config.embedder), store=config.store) as api:
        yield HttpBackend("http://testserver", api.secret, client=api.client)


def make_backend(config: RunConfig, api_key: str | None = None, client: Any = None) -> Backend:
    if config.http_url or client is not None:
        if not api_key:
            raise InvalidInput("--http needs --api-key", field="api_key")
        return HttpBackend(config.http_url or "http://testserver", api_key, client=client)
    return EngineBackend(config.replay_config())


def score_records(
    records: Mapping[str, Sequence[QuestionRecord]],
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(per-question frames, summaries by category, latency tables) per configuration name."""
    frames = {name: metrics_frame(score(r) for r in recs) for name, recs in records.items()}
    summaries = {name: summarize(frame, by="category") for name, frame in frames.items()}
    latency = {name: latency_table(r.stage_ms for r in recs) for name, recs in records.items()}
    return frames, summaries, latency


def overview(summaries: Mapping[str, Any], columns: Sequence[str] = SUMMARY_COLUMNS) -> Any:
    """One row per configuration: the `all` row of its summary, the chosen columns."""
    import pandas as pd

    rows = {name: table.loc["all"] for name, table in summaries.items()}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    for col in ("n", "overflow_count", "n_recall", "n_supersession"):
        if col in frame.columns:
            frame[col] = frame[col].astype("int64")
    return frame[[c for c in columns if c in frame.columns]].dropna(axis=1, how="all")


def run_eval(
    config: RunConfig,
    *,
    api_key: str | None = None,
    out_dir: str | Path | None = None,
    write: bool = True,
    progress: bool = False,
    dataset: Dataset | None = None,
    backend: Backend | None = None,
) -> RunResult:
    """Replay, score and (when `write`) write the run directory. `dataset` / `backend` override the
    ones named by the config (tests and notebooks pass them)."""
    started = time.perf_counter()
    configs = configurations(config)
    for name, cfg in configs.items():
        try:
            check_config(cfg)
        except InvalidInput as exc:
            raise InvalidInput(f"configuration {name!r}, {exc.message}", field=exc.field) from exc
    if config.http_url is not None and config.http_url != LOCAL_API:
        check_base_url(config.http_url)
    if write:
        check_runs_dir(out_dir)
    data = select(dataset if dataset is not None else load_dataset(config.dataset), config)
    check_questions(data, config)
    with contextlib.ExitStack() as stack:
        engine = backend if backend is not None else stack.enter_context(open_backend(config, api_key))
        records = replay_many(
            data,
            engine,
            configs,
            questions=question_filter(config),
            progress=progress,
            limit_questions=config.limit_questions,
        )
    frames, summaries, latency = score_records(records)
    result = RunResult(
        config=config,
        run_dir=None,
        summaries=summaries,
        latency=latency,
        frames=frames,
        latest=latest_evidence_table(records, data),
        seconds=time.perf_counter() - started,
        conversations=len({r.conversation_id for recs in records.values() for r in recs}),
    )
    if write:
        result.run_dir = write_run(result, configs, records, data, out_dir)
    return result


def budget_table(summaries: Mapping[str, Any], config: RunConfig, metric: str = "recall_in_context") -> Any:
    """`metric` of the chosen configuration per category (rows, `all` last) and budget (columns);
    None when the run has a single budget."""
    import pandas as pd

    names = {config.budget: CHOSEN, **{b: f"{CHOSEN}@{b}" for b in config.budgets if b != config.budget}}
    if len(names) < 2:
        return None
    columns = {b: summaries[name][metric] for b, name in sorted(names.items()) if name in summaries}
    table = pd.DataFrame(columns)
    table.columns = [f"{b} tokens" for b in table.columns]
    return table


def _question_rows(name: str, records: Sequence[QuestionRecord], frame: Any) -> list[dict[str, Any]]:
    rows = []
    for record, metrics in zip(records, frame.to_dict(orient="records"), strict=True):
        row = {"config": name, **{k: (None if v != v else v) for k, v in metrics.items()}}
        row["evidence"] = list(record.evidence)
        row["ranked_top10"] = list(dict.fromkeys(record.ranked))[:10]
        row["as_of"] = record.as_of.isoformat() if record.as_of else None
        rows.append(row)
    return rows


def write_run(
    result: RunResult,
    configs: Mapping[str, ReplayConfig],
    records: Mapping[str, Sequence[QuestionRecord]],
    dataset: Dataset,
    out_dir: str | Path | None,
) -> Path:
    run_dir = new_run_dir(out_dir, result.config.label())
    revision = git_revision()
    write_json(
        run_dir / "config.json",
        {
            "run": result.config,
            "configurations": dict(configs),
            "weights_used": {name: weights_used(cfg) for name, cfg in configs.items()},
            "dataset": {
                "name": dataset.name,
                "conversations": result.conversations,
                "source": dataset.source,
                "license": dataset.license,
                "sha256": dataset_sha256(dataset),
            },
            "settings": run_settings(),
            "git": revision,
            "seconds": round(result.seconds, 3),
        },
    )
    with (run_dir / "questions.jsonl").open("wb") as fh:
        for name, recs in records.items():
            for row in _question_rows(name, recs, result.frames[name]):
                fh.write(msgspec.json.encode(row) + b"\n")
    summary = {
        name: {
            "by_category": _records_of(table),
            "latency_ms": _records_of(result.latency[name]),
        }
        for name, table in result.summaries.items()
    }
    if result.latest is not None and len(result.latest):
        for name, row in _records_of(result.latest).items():
            summary[name]["latest_evidence"] = {"all": row}
    write_json(run_dir / "summary.json", summary)
    figures = {
        "recall_at_k.png": plots.recall_at_k(result.summaries),
        "recall_in_context_by_category.png": plots.metric_by_category(result.summaries),
        "utilization.png": plots.histogram(list(result.frames[CHOSEN]["utilization"]), "utilization"),
    }
    by_budget = budget_table(result.summaries, result.config)
    if by_budget is not None:
        figures["recall_vs_budget.png"] = plots.recall_vs_budget(by_budget)
    for file_name, fig in figures.items():
        plots.save(fig, run_dir / file_name)
    (run_dir / "report.md").write_text(report_markdown(result, dataset, revision.commit, list(figures)))
    return run_dir


def _records_of(frame: Any) -> dict[str, dict[str, float | None]]:
    return {
        str(idx): {str(k): (None if v != v else float(v)) for k, v in row.items()}
        for idx, row in frame.to_dict(orient="index").items()
    }


def report_markdown(result: RunResult, dataset: Dataset, commit: str | None, figures: Sequence[str]) -> str:
    c = result.config
    half_life = "preset" if c.recency_half_life_days is None else c.recency_half_life_days
    extracted = c.ingest == "agent" or c.replay_config().extract  # the agent loop extracts in assemble
    lines = [
        f"# Eval run: {c.label()}",
        "",
        f"- dataset: `{dataset.name}` ({result.conversations} conversations)",
        f"- preset `{c.preset or 'balanced'}`, normalization `{c.normalization}`, weights "
        f"`{c.weights or 'preset'}` (weights used `{weights_used(c.replay_config())}`), half-life "
        f"`{half_life}`, budget {c.budget}",
        f"- embedder `{c.embedder}`, store `{c.store}`, ingest `{c.ingest}`, "
        f"extract {extracted}, "
        f"{'HTTP ' + c.http_url if c.http_url else 'engine in process'}",
        f"- git `{commit or 'unknown'}`; {result.seconds:.1f} s",
        "",
        "## Overview (all questions)",
        "",
        markdown_table(overview(result.summaries)),
        "",
        *_latest_section(result),
        *_budget_section(result),
        "## The chosen configuration by category",
        "",
        markdown_table(
            result.summaries[CHOSEN][
                [col for col in SUMMARY_COLUMNS if col in result.summaries[CHOSEN].columns]
            ].dropna(axis=1, how="all")
        ),
        "",
        "## Latency per stage (ms), chosen configuration",
        "",
        markdown_table(result.latency[CHOSEN], floatfmt=".2f"),
        "",
        "## Plots",
        "",
        *[f"![{name}]({name})" for name in figures],
        "",
    ]
    return "\n".join(lines)


def _budget_section(result: RunResult) -> list[str]:
    out: list[str] = []
    for metric in ("recall_in_context", "recall_in_context_whole"):
        table = budget_table(result.summaries, result.config, metric)
        if table is not None:
            out += [
                f"## `{metric}` by category and budget (chosen configuration)",
                "",
                markdown_table(table),
                "",
            ]
    return out


def _latest_section(result: RunResult) -> list[str]:
    if result.latest is None or not len(result.latest):
        return []
    return [
        "## Newest evidence in context (questions whose evidence spans an old and a new value)",
        "",
        markdown_table(result.latest),
        "",
    ]


def print_summary(result: RunResult, out: Any = None) -> str:
    text: str = overview(result.summaries).to_string(float_format=lambda v: f"{v:.3f}")
    by_budget = budget_table(result.summaries, result.config)
    if by_budget is not None:
        text += "\n\nrecall in context by category and budget (chosen configuration):\n"
        text += by_budget.to_string(float_format=lambda v: f"{v:.3f}")
    if result.latest is not None and len(result.latest):
        text += "\n\nnewest evidence in context (old and new value in the evidence):\n"
        text += result.latest.to_string(float_format=lambda v: f"{v:.3f}")
    if out is not None:
        print(text, file=out)
        if result.run_dir is not None:
            print(f"\nwritten to {result.run_dir}", file=out)
    return text


__all__: Sequence[str] = (
    "BASELINES",
    "CHOSEN",
    "RunConfig",
    "RunResult",
    "configurations",
    "make_backend",
    "overview",
    "print_summary",
    "run_eval",
    "score_records",
    "select",
)
