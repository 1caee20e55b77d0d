"""The write path: turn -> extract -> supersede -> store.

- `turns`: ingest on assemble (plan a turn's records outside the store, then commit them in one
  transaction), used by `engine.assemble` (`POST /v0/context/assemble`, the eval's agent loop) and
  `/v1/memories`.
- `ingest`: extracted fact drafts -> Memory records -> supersession -> store.
- `results`: what a write reports (`Upsert`, `Extracted`).
- `supersession`: one current value per single-valued fact; the history is kept.
- `predicates`: the predicate registry (which predicates hold one value at a time).
- `batch_upsert`: structured items of `POST /v0/memories:batch_upsert` -> Memory records.

Extraction itself (rules and the optional LLM extractor) is `engine.extract`; plain creates, patches and
deletes of memories are `engine.memory_service`.
"""
