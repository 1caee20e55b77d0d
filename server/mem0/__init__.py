"""The mem0 adapter: mem0's filter language, its records and its operations, over Loci's services.

Mapping (the same as /v1): `user_id` is a memory's `entity_id`, `agent_id` its `agent_id`, `run_id` and
`app_id` live in its `metadata`, `categories` are its `tags`, `expiration_date` is the last day before
its `valid_to`. Everything happens in the namespace `default`. See docs/integrations.md.
"""
