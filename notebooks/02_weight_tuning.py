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
# # 02 · Weight tuning: sweep and fit
#
# A random sweep over channel weights, presets and half-lives, chosen on some conversations and
# scored on held-out ones (the split is by conversation), then weights learned from the score
# components with logistic regression (cross-validated by conversation).

# %% tags=["parameters"]
dataset_name = "synthetic"
limit = 6  # conversations
samples = 6  # random weight vectors
presets = ["balanced", "fast"]
half_lives = [7, 45]
holdout = 0.34
metric = "recall_in_context"
embedder = "hash"
folds = 3

# %%
from evals import plots
from evals.fit import FitConfig, run_fit
from evals.sweep import SweepConfig, retrieval_block, run_sweep

sweep = run_sweep(
    SweepConfig(
        dataset=dataset_name,
        limit=limit,
        samples=samples,
        presets=tuple(presets),
        half_lives=tuple(half_lives),
        holdout=holdout,
        metric=metric,
        embedder=embedder,
    ),
    write=False,
)
print("tuning:", sweep.split.tune)
print("held out:", sweep.split.held_out)
sweep.results.drop(columns=["name"]).head(10)

# %%
print("best on the tuning conversations:", retrieval_block(sweep.best))
fig = plots.sweep_scatter(sweep.results, metric)

# %%
fig = plots.sweep_by_factor(sweep.results, metric, "preset")

# %% [markdown]
# ## Fit weights from score components

# %%
fit = run_fit(FitConfig(dataset=dataset_name, limit=limit, folds=folds, embedder=embedder))
print(
    f"held-out AUC {fit.cv_auc:.3f}; held-out MRR {fit.cv_mrr_learned:.3f} (learned) "
    f"vs {fit.cv_mrr_collection:.3f} (collection weights)"
)
fit.preset_json()
