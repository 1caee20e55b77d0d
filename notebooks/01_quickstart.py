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
# # 01 · Quickstart: the served API in process
#
# Start the real Loci app in this process (no server, no socket: Litestar's TestClient over ASGI),
# create an API key, write a few memories over HTTP and assemble a context for an agent turn.
# Then replay a small synthetic dataset through the same HTTP API and score it.

# %% tags=["parameters"]
org = "demo"
embedder = "hash"  # "minilm" for real semantic search (slower)
budget = 300
replay_conversations = 2

# %%
import json

from evals.local_api import start_local_api
from evals.run import RunConfig, make_backend, overview, run_eval
from evals.synthetic import SyntheticConfig, generate

api = start_local_api(org=org, embedder=embedder).__enter__()
print("key id:", api.key.key_id, "org:", api.org)

# %% [markdown]
# ## Write memories (POST /v0/memories)

# %%
items = [
    {
        "type": "fact",
        "text": "Alice lives in Lisbon",
        "entity_id": "ent:alice",
        "subject": "ent:alice",
        "predicate": "lives_in",
        "object": "Lisbon",
    },
    {"type": "event", "text": "Alice adopted a cat named Miso", "entity_id": "ent:alice"},
    {"type": "note", "text": "Alice prefers short answers and metric units", "entity_id": "ent:alice"},
]
created = api.post("/v0/memories", {"items": items})["items"]
[m["memory_id"] for m in created]

# %% [markdown]
# ## Assemble a context (POST /v0/context/assemble)

# %%
answer = api.post(
    "/v0/context/assemble",
    {
        "entity_id": "ent:alice",
        "turn": "Where does Alice live, and does she have pets?",
        "budget": {"max_context_tokens": budget},
        "return": {"include_raw_matches": True},
    },
)
print(json.dumps(answer["context"], indent=2))
print("weights used:", answer["retrieval_summary"]["weights_used"])

# %% [markdown]
# ## Replay a dataset through the same HTTP API
# `HttpBackend` writes each turn with POST /v0/memories and asks each question with
# POST /v0/context/assemble (`as_of` = the question's time). Events only over HTTP.

# %%
dataset = generate(SyntheticConfig(seed=1, entities=replay_conversations))
config = RunConfig(dataset="synthetic", rank_depth=0, budget=budget, http_url="http://testserver")
backend = make_backend(config, api.secret, client=api.client)
result = run_eval(config, dataset=dataset, backend=backend, write=False)
overview(result.summaries)

# %%
api.__exit__(None, None, None)
