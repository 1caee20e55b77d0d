"""What a write reports, per item and per turn (the assemble response's `extracted`)."""

from __future__ import annotations

from typing import Literal

import msgspec

from loci.wire.models import Entity, Memory


class Upsert(msgspec.Struct, kw_only=True):
    """One write's outcome. `memory_id` is the memory written or kept (SKIPPED: the fact it repeated);
    for a negation, which stores nothing of its own, the stored turn that said it, or null."""

    memory_id: str | None
    action: Literal["UPSERTED", "SUPERSEDED", "SKIPPED"]
    supersedes: list[str] = msgspec.field(default_factory=list)
    #: facts written anew because this write ended their value before it was said again: each holds
    #: again from then (`provenance.resumes` names the fact it continues)
    resumed: list[str] = msgspec.field(default_factory=list)


class Extracted(msgspec.Struct, kw_only=True):
    """Filled by the ingest path when `ingest` ran; empty otherwise."""

    entities: list[Entity] = msgspec.field(default_factory=list)
    facts: list[Memory] = msgspec.field(default_factory=list)
    upserts: list[Upsert] = msgspec.field(default_factory=list)
    #: facts of the turn are missing (the turn is stored all the same): extraction stopped at its time
    #: budget, or the turn stated more facts than one turn may write (`facts_left_out`)
    truncated: bool = False
    #: facts extracted past the per-turn limit (engine.write.turns.MAX_FACTS_PER_TURN), not written
    facts_left_out: int = 0
