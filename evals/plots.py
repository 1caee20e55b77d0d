"""Matplotlib figures of the harness (Agg backend outside notebooks: no display needed). Each function draws from an
already computed table (a pandas DataFrame from `evals.metrics` / `evals.sweep` / `evals.curves`)
and returns the Figure; `save(fig, path)` writes a PNG and closes it. No numbers are computed here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

if "inline" not in os.environ.get("MPLBACKEND", ""):  # a notebook kernel keeps its inline backend
    matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from evals.metrics import RECALL_KS  # noqa: E402


def save(fig: Figure, path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out


def recall_at_k(summaries: Mapping[str, Any], ks: Sequence[int] = RECALL_KS) -> Figure:
    """One line per configuration: evidence recall@k (the `all` row of each summary)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, table in summaries.items():
        row = table.loc["all"]
        ax.plot(list(ks), [row[f"recall_at_{k}"] for k in ks], marker="o", label=name)
    ax.set_xlabel("k")
    ax.set_ylabel("evidence recall@k")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


def metric_by_category(summaries: Mapping[str, Any], metric: str = "recall_in_context") -> Figure:
    """Grouped bars: `metric` per category (and `all`), one bar per configuration."""
    names = list(summaries)
    categories = sorted({c for t in summaries.values() for c in t.index if c != "all"}) + ["all"]
    fig, ax = plt.subplots(figsize=(min(11.0, 2.0 + 0.3 * len(categories) * max(1, len(names))), 4))
    width = 0.8 / max(1, len(names))
    for j, name in enumerate(names):
        table = summaries[name]
        values = [float(table.loc[c, metric]) if c in table.index else 0.0 for c in categories]
        ax.bar([i + j * width for i in range(len(categories))], values, width=width, label=name)
    ax.set_xticks([i + width * (len(names) - 1) / 2 for i in range(len(categories))])
    ax.set_xticklabels(categories, rotation=20)
    ax.set_ylabel(metric)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    return fig


def histogram(values: Sequence[float], label: str, bins: int = 20) -> Figure:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist([v for v in values if v == v], bins=bins)
    ax.set_xlabel(label)
    ax.set_ylabel("questions")
    return fig


def sweep_scatter(results: Any, metric: str) -> Figure:
    """Held-out against tuning score of every configuration of a sweep (`evals.sweep` table)."""
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(results[f"train_{metric}"], results[f"test_{metric}"], s=18)
    lo = float(min(results[f"train_{metric}"].min(), results[f"test_{metric}"].min()))
    hi = float(max(results[f"train_{metric}"].max(), results[f"test_{metric}"].max()))
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--")
    ax.set_xlabel(f"{metric} (tuning conversations)")
    ax.set_ylabel(f"{metric} (held-out conversations)")
    return fig


def sweep_by_factor(results: Any, metric: str, factor: str) -> Figure:
    """Mean held-out score per value of one swept factor (preset, normalization, half-life)."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    grouped = results.groupby(factor)[f"test_{metric}"].agg(["mean", "max"])
    xs = [str(i) for i in grouped.index]
    ax.bar(xs, grouped["max"], color="#bcd", label="best")
    ax.bar(xs, grouped["mean"], width=0.5, label="mean")
    ax.set_xlabel(factor)
    ax.set_ylabel(f"held-out {metric}")
    ax.legend()
    return fig


def budget_curves(curves: Any, metric: str = "recall_in_context") -> Figure:
    """One line per preset: `metric` against the token budget (`evals.curves.budget_curve` table)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, group in curves.groupby("config", sort=False):
        group = group.sort_values("budget")
        ax.plot(group["budget"], group[metric], marker="o", label=str(name))
    ax.set_xlabel("budget (tokens)")
    ax.set_ylabel(metric)
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


def recall_vs_budget(table: Any, ylabel: str = "evidence recall in context") -> Figure:
    """One line per category (`all` bold): the value against the budget (`evals.run.budget_table`)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    budgets = [int(str(c).split()[0]) for c in table.columns]
    for name, row in table.iterrows():
        bold = name == "all"
        ax.plot(
            budgets,
            list(row),
            marker="o",
            label=str(name),
            lw=2.5 if bold else 1.2,
            color="black" if bold else None,
        )
    ax.set_xlabel("budget (tokens)")
    ax.set_ylabel(ylabel)
    ax.set_xticks(budgets)
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def timeline(gold: Any, stored: Any | None = None, title: str = "") -> Figure:
    """Intervals of a fact's values over time: the gold truth (and what the engine stored).
    Tables from `evals.timeline` with columns value, start, end, open (open = still true at the end)."""
    fig, ax = plt.subplots(figsize=(8, 2.8))
    rows = [("gold", gold)] + ([("stored", stored)] if stored is not None else [])
    for y, (_label, table) in enumerate(rows):
        for _, r in table.iterrows():
            ax.barh(
                y,
                (r["end"] - r["start"]),
                left=r["start"],
                height=0.5,
                alpha=0.7,
                hatch="//" if r["open"] else None,
            )
            ax.text(r["start"], y, f" {r['value']}", va="center", fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for label, _ in rows])
    ax.set_title(title)
    fig.autofmt_xdate()
    return fig
