"""Wire records of POST /v0/extract (the batch-upsert records live in engine.write.batch_upsert)."""

from __future__ import annotations

import msgspec

from engine.models import Entity, EntityId, Memory, MemoryText, Namespace


class ExtractRequest(msgspec.Struct, kw_only=True):
    text: MemoryText
    #: the subject of first-person statements (an `ent:` id, else `ent:<slug>` of it)
    entity_id: EntityId = "ent:user"
    namespace: Namespace = "default"


class ExtractResult(msgspec.Struct, kw_only=True):
    """The API's ExtractResult: entities and fact Memory records (not stored)."""

    entities: list[Entity]
    facts: list[Memory]
    #: extraction stopped at its time budget: facts of the text's later sentences are missing
    truncated: bool = False
