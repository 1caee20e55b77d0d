# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 · Token budget: recall against budget, per preset
#
# How much of the evidence reaches the assembled context as the token budget grows, for each
# preset. Every conversation is written once; each (preset, budget) pair is asked on it.

# %% tags=["parameters"]
dataset_name = "synthetic"
limit = 4  # conversations
limit_questions = None  # per conversation
presets = ["balanced", "fast", "recent"]
budgets = [256, 600, 1200]
embedder = "hash"

# %%
from evals import plots
from evals.curves import budget_curve
from evals.loaders import load_dataset
from evals.replay import ReplayConfig

dataset = load_dataset(dataset_name).limit(limit)
curve = budget_curve(
    dataset,
    presets=presets,
    budgets=budgets,
    limit_questions=limit_questions,
    base=ReplayConfig(embedder=embedder, rank_depth=0),
)
curve

# %%
fig = plots.budget_curves(curve, "recall_in_context")

# %%
fig = plots.budget_curves(curve, "utilization")
