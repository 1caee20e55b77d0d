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
# # 03 · Supersession on synthetic scenarios
#
# Seeded scenarios in which facts about a user change over time (moves, jobs, budgets, ages, pets).
# Probes ask at a point in time; the gold answer is the value current then. We replay them, score
# supersession accuracy and stale leakage per predicate, and draw one fact's timeline: the gold
# values against what the engine stored.

# %% tags=["parameters"]
seed = 3
entities = 4
budget = 1200
conversation_index = 0
predicate = "works_at"
embedder = "hash"

# %%
from evals import plots
from evals.run import CHOSEN, RunConfig, run_eval
from evals.synthetic import SyntheticConfig, generate
from evals.timeline import gold_timeline, stored_timeline

dataset = generate(SyntheticConfig(seed=seed, entities=entities))
print(len(dataset.conversations), "conversations,", len(dataset.questions), "probes")
conversation = dataset.conversations[conversation_index]
[(t.timestamp.date().isoformat(), t.speaker, t.text) for t in conversation.turns if t.facts][:8]

# %%
result = run_eval(
    RunConfig(dataset="synthetic", budget=budget, embedder=embedder, rank_depth=0),
    dataset=dataset,
    write=False,
)
result.summaries[CHOSEN][
    ["n", "supersession_correct", "stale_leak", "stale_active", "false_supersession", "recall_in_context"]
]

# %% [markdown]
# ## A timeline of one fact's values

# %%
gold = gold_timeline(conversation, predicate)
stored = stored_timeline(conversation, predicate)
gold

# %%
stored[["value", "start", "end", "open", "status"]]

# %%
fig = plots.timeline(gold, stored, title=f"{conversation.conversation_id}: {predicate}")
