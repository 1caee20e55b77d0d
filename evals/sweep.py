"""`loci eval sweep`: search retrieval settings, choose on some conversations, score on held-out ones.

    run_sweep(SweepConfig(dataset="synthetic", mode="random", samples=20)) -> SweepResult

1. The conversations that ask a kept question are split (never the questions: every question of a
   conversation is on the same side) into a tuning part and a held-out part (`split_conversations`, seeded).
2. Candidates (`candidates`): `grid` = every combination of weight vectors x presets x
   normalizations x half-lives; `random` = `samples` draws (weights from a flat Dirichlet over the
   five channels, the other factors uniformly). Each preset also runs with its own weights
   (`weights` = None), the reference point.
3. Every conversation is written ONCE and every candidate is asked on it (`evals.replay_many`).
4. Each candidate gets `train_<metric>` (mean over tuning questions) and `test_<metric>` (held
   out). The best is chosen by the tuning score only; its held-out score is the honest estimate.

The run directory holds config.json (with the git revision), results.csv, report.md, best.json
(the chosen settings as a `retrieval` block ready to paste) and PNG plots.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from engine.errors import InvalidInput
from evals import plots
from evals.loaders import load_dataset
from evals.metrics import LOWER_IS_BETTER, RATE_COLUMNS, metrics_frame, score
from evals.model import Dataset
from evals.replay import Backend, EngineBackend, ReplayConfig, check_config
from evals.replay_many import CHANNELS, full_weights, replay_many
from evals.run import check_questions, question_filter
from evals.rundir import (
    check_runs_dir,
    dataset_sha256,
    git_revision,
    markdown_table,
    new_run_dir,
    run_settings,
    write_json,
)


class Split(msgspec.Struct, frozen=True, kw_only=True):
    tune: tuple[str, ...]
    held_out: tuple[str, ...]


def split_conversations(conversation_ids: Sequence[str], holdout: float, seed: int = 0) -> Split:
    """A seeded split of conversation ids: round(holdout * n) held out (at least one on each side)."""
    ids = list(dict.fromkeys(conversation_ids))
    if len(ids) < 2:
        raise InvalidInput("a held-out split needs at least two conversations", field="dataset")
    if not 0.0 < holdout < 1.0:
        raise InvalidInput("holdout must be between 0 and 1", field="holdout")
    rng = random.Random(seed)
    shuffled = ids[:]
    rng.shuffle(shuffled)
    n_out = min(len(ids) - 1, max(1, round(holdout * len(ids))))
    held = set(shuffled[:n_out])
    return Split(tune=tuple(i for i in ids if i not in held), held_out=tuple(i for i in ids if i in held))


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    preset: str
    normalization: str
    weights: dict[str, float] | None  # None: the preset's own weights
    half_life: int | None  # None: the preset's

    def name(self) -> str:
        w = "preset" if self.weights is None else "/".join(f"{self.weights[c]:.2f}" for c in CHANNELS)
        return f"{self.preset}|{self.normalization}|{w}|{'-' if self.half_life is None else self.half_life}"


class SweepConfig(msgspec.Struct, frozen=True, kw_only=True):
    dataset: str = "synthetic"
    mode: Literal["grid", "random"] = "random"
    samples: int = 20
    seed: int = 0
    presets: tuple[str, ...] = ("balanced",)
    normalizations: tuple[str, ...] = ("minmax",)
    half_lives: tuple[int, ...] = ()  # () = the preset's
    weights: tuple[dict[str, float], ...] = ()  # explicit vectors to include
    grid_step: float = 0.5  # grid mode without explicit weights: the simplex grid's step
    holdout: float = 0.3
    metric: str = "recall_in_context"
    budget: int = 1200
    rank_depth: int = 0  # 0: rank only the preset's top_k (recall@k beyond it is not needed here)
    limit: int | None = None
    limit_questions: int | None = None
    categories: tuple[str, ...] = ()
    embedder: str = "hash"
    store: str = "memory"


class SweepResult(msgspec.Struct, kw_only=True):
    config: SweepConfig
    split: Split
    results: Any  # DataFrame, one row per candidate, best tuning score first
    best: Candidate
    run_dir: Path | None = None
    seconds: float = 0.0


def simplex_grid(step: float, channels: Sequence[str] = CHANNELS) -> list[dict[str, float]]:
    """Every weight vector on the simplex with the given step (e.g. 0.5 over 5 channels: 15)."""
    n = round(1.0 / step)
    if n < 1 or abs(n * step - 1.0) > 1e-9:
        raise InvalidInput("grid_step must divide 1 (0.5, 0.25, 0.2, ...)", field="grid_step")
    out = []
    for parts in itertools.product(range(n + 1), repeat=len(channels)):
        if sum(parts) == n:
            out.append({c: p / n for c, p in zip(channels, parts, strict=True)})
    return out


def _dirichlet(rng: random.Random) -> dict[str, float]:
    draws = [rng.expovariate(1.0) for _ in CHANNELS]
    total = sum(draws)
    return {c: round(d / total, 4) for c, d in zip(CHANNELS, draws, strict=True)}


def candidates(config: SweepConfig) -> list[Candidate]:
    """The configurations to try (deduplicated, in a stable order)."""
    half_lives: list[int | None] = list(config.half_lives) or [None]
    explicit = [full_weights(w) for w in config.weights]
    out: list[Candidate] = []
    for preset, norm in itertools.product(config.presets, config.normalizations):
        out.append(Candidate(preset=preset, normalization=norm, weights=None, half_life=None))
    if config.mode == "grid":
        vectors = explicit or simplex_grid(config.grid_step)
        for preset, norm, w, h in itertools.product(
            config.presets, config.normalizations, vectors, half_lives
        ):
            out.append(Candidate(preset=preset, normalization=norm, weights=w, half_life=h))
    else:
        rng = random.Random(config.seed)
        for w in explicit:
            out.append(
                Candidate(
                    preset=config.presets[0],
                    normalization=config.normalizations[0],
                    weights=w,
                    half_life=half_lives[0],
                )
            )
        for _ in range(config.samples):
            out.append(
                Candidate(
                    preset=rng.choice(config.presets),
                    normalization=rng.choice(config.normalizations),
                    weights=_dirichlet(rng),
                    half_life=rng.choice(half_lives),
                )
            )
    return list({c.name(): c for c in out}.values())


def replay_config(config: SweepConfig, candidate: Candidate) -> ReplayConfig:
    return ReplayConfig(
        preset=candidate.preset,
        normalization=candidate.normalization,
        weights=candidate.weights,
        recency_half_life_days=candidate.half_life,
        budget=config.budget,
        rank_depth=config.rank_depth,
        embedder=config.embedder,
        store=config.store,
    )


def score_candidates(
    records_by_name: Mapping[str, Sequence[Any]],
    cands: Mapping[str, Candidate],
    split: Split,
    metric: str,
) -> Any:
    """The results table: per candidate its factors, `train_<metric>`, `test_<metric>` and a few
    held-out companions; sorted by the tuning score (best first: lowest for `LOWER_IS_BETTER`)."""
    import pandas as pd

    held = set(split.held_out)
    rows = []
    for name, records in records_by_name.items():
        frame = metrics_frame(score(r) for r in records)
        if metric not in frame.columns:
            raise InvalidInput(f"unknown metric {metric!r}", field="metric")
        test = frame[frame["conversation_id"].isin(held)]
        train = frame[~frame["conversation_id"].isin(held)]
        c = cands[name]
        row: dict[str, Any] = {
            "name": name,
            "preset": c.preset,
            "normalization": c.normalization,
            "half_life": c.half_life if c.half_life is not None else "preset",
            "weights": "preset" if c.weights is None else "explicit",
        }
        for ch in CHANNELS:
            row[f"w_{ch}"] = c.weights[ch] if c.weights is not None else float("nan")
        row[f"train_{metric}"] = float(train[metric].astype("float64").mean())
        row[f"test_{metric}"] = float(test[metric].astype("float64").mean())
        for extra in ("recall_at_10", "supersession_correct", "stale_leak"):
            if extra != metric:
                row[f"test_{extra}"] = float(test[extra].astype("float64").mean())
        row["test_overflow_count"] = int(test["overflow"].sum())
        row["n_train"] = int(len(train))
        row["n_test"] = int(len(test))
        rows.append(row)
    table = pd.DataFrame(rows)
    ascending = metric in LOWER_IS_BETTER
    return table.sort_values(f"train_{metric}", ascending=ascending, kind="stable").reset_index(drop=True)


def run_sweep(
    config: SweepConfig,
    *,
    out_dir: str | Path | None = None,
    write: bool = True,
    progress: bool = False,
    dataset: Dataset | None = None,
    backend: Backend | None = None,
) -> SweepResult:
    started = time.perf_counter()
    if config.metric not in RATE_COLUMNS:  # checked before the replay, not after it
        raise InvalidInput(f"unknown metric {config.metric!r}; valid: {list(RATE_COLUMNS)}", field="metric")
    cands = {c.name(): c for c in candidates(config)}
    configs = {name: replay_config(config, c) for name, c in cands.items()}
    for cfg in configs.values():
        check_config(cfg)
    if write:
        check_runs_dir(out_dir)
    data = dataset if dataset is not None else load_dataset(config.dataset)
    if config.limit is not None:
        data = data.limit(config.limit)
    check_questions(data, config)
    keep = question_filter(config)
    # only conversations that ask something: another would leave its side of the split without a score
    asked = {q.conversation_id for q in data.questions if keep(q)}
    ids = [c.conversation_id for c in data.conversations if c.conversation_id in asked]
    split = split_conversations(ids, config.holdout, config.seed)
    engine = backend if backend is not None else EngineBackend(next(iter(configs.values())))
    records = replay_many(
        data,
        engine,
        configs,
        questions=keep,
        progress=progress,
        limit_questions=config.limit_questions,
    )
    table = score_candidates(records, cands, split, config.metric)
    result = SweepResult(
        config=config,
        split=split,
        results=table,
        best=cands[str(table.loc[0, "name"])],
        seconds=time.perf_counter() - started,
    )
    if write:
        result.run_dir = write_sweep(result, data, out_dir)
    return result


def retrieval_block(candidate: Candidate) -> dict[str, Any]:
    """The chosen settings as the request's `retrieval` object (paste into an assemble call)."""
    block: dict[str, Any] = {"preset": candidate.preset, "normalization": candidate.normalization}
    if candidate.weights is not None:
        block["weights"] = dict(candidate.weights)
    if candidate.half_life is not None:
        block["recency_half_life_days"] = candidate.half_life
    return block


def write_sweep(result: SweepResult, dataset: Dataset, out_dir: str | Path | None = None) -> Path:
    c = result.config
    run_dir = new_run_dir(out_dir, f"sweep-{Path(c.dataset).stem}")
    revision = git_revision()
    write_json(
        run_dir / "config.json",
        {
            "sweep": c,
            "split": result.split,
            "git": revision,
            "dataset": {"name": dataset.name, "sha256": dataset_sha256(dataset)},
            "settings": run_settings(),
            "seconds": round(result.seconds, 3),
        },
    )
    result.results.to_csv(run_dir / "results.csv", index=False)
    write_json(run_dir / "best.json", {"retrieval": retrieval_block(result.best)})
    figures = {"sweep_scatter.png": plots.sweep_scatter(result.results, c.metric)}
    for factor, values in (
        ("preset", c.presets),
        ("normalization", c.normalizations),
        ("half_life", c.half_lives),
    ):
        if len(values) > 1:
            figures[f"sweep_by_{factor}.png"] = plots.sweep_by_factor(result.results, c.metric, factor)
    for file_name, fig in figures.items():
        plots.save(fig, run_dir / file_name)
    show = result.results.drop(columns=["name"]).head(20)
    best = result.results.iloc[0]
    lines = [
        f"# Sweep on `{dataset.name}` ({c.mode}, {len(result.results)} configurations)",
        "",
        f"- split by conversation (seed {c.seed}): tuning {len(result.split.tune)}, held out "
        f"{len(result.split.held_out)}: {', '.join(result.split.held_out)}",
        f"- chosen by tuning `{c.metric}` = {best[f'train_{c.metric}']:.3f}; held-out "
        f"`{c.metric}` = {best[f'test_{c.metric}']:.3f}",
        f"- git `{revision.commit or 'unknown'}`; {result.seconds:.1f} s",
        "",
        "Best settings (`best.json`):",
        "",
        "```json",
        msgspec.json.format(
            msgspec.json.encode({"retrieval": retrieval_block(result.best)}), indent=2
        ).decode(),
        "```",
        "",
        "## Top configurations (by tuning score)",
        "",
        markdown_table(show),
        "",
        *[f"![{name}]({name})" for name in figures],
        "",
    ]
    (run_dir / "report.md").write_text("\n".join(lines))
    return run_dir


def print_sweep(result: SweepResult, out: Any) -> None:
    m = result.config.metric
    cols = ["preset", "normalization", "half_life", *[f"w_{c}" for c in CHANNELS], f"train_{m}", f"test_{m}"]
    print(result.results[cols].head(15).to_string(float_format=lambda v: f"{v:.3f}"), file=out)
    print("\nbest (chosen on tuning conversations):", file=out)
    print(msgspec.json.encode({"retrieval": retrieval_block(result.best)}).decode(), file=out)
    if result.run_dir is not None:
        print(f"\nwritten to {result.run_dir}", file=out)


__all__: Sequence[str] = (
    "Candidate",
    "Split",
    "SweepConfig",
    "SweepResult",
    "candidates",
    "print_sweep",
    "retrieval_block",
    "run_sweep",
    "score_candidates",
    "simplex_grid",
    "split_conversations",
)
