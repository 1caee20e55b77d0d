"""Ingest on assemble: store the turn, extract its facts, supersede — in two steps.

`plan_turn` runs everything that may be slow or may call out (the extractor, possibly an LLM) and
builds the records, touching no store; `embed_for_write` embeds their texts beforehand; `commit_turn`
writes the records and their vectors in ONE `store.transaction()` (it joins the caller's, e.g. the
server's idempotency unit). `engine.assemble` runs retrieval before `commit_turn`, so the retrieval of
a call sees the state before the call's own writes.

Decisions:
- `store_turn`: `none` stores nothing; `event` | `note` | `fact` store the turn text as one memory of
  that type. A `fact` turn is a statement as it was said: the entity is its subject, it has no
  predicate, and it carries the conflict keys of the single-valued facts extracted from it, so a later
  value of any of them ends it with them (`engine.write.supersession`: it never supersedes, ties or
  outlives a value). A turn the rules found no such fact in has no key and is never ended by one.
  A blank turn (nothing visible: whitespace, a NUL, a zero-width space) is never stored.
- `tags` go on every memory the turn writes (the stored turn and its new facts); a fact that repeats
  one already held (SKIPPED) writes nothing, so the held one keeps its own tags.
- The turn memory and its facts are timestamped with the request's reference time (`as_of` when given,
  so replays of dated conversations keep their dates; else now). Facts carry
  `provenance.source_turn` = the stored turn's id (absent when the turn is not stored).
- A turn writes at most `MAX_FACTS_PER_TURN` facts, its first ones; the rest are counted in
  `Extracted.facts_left_out` (and `truncated` is true). Every fact costs a supersession decision, a
  row, an index entry and a vector inside the write transaction, which other writers wait for.
- First-person statements are about `ingest.subject` when given, else the speaker a `<Name>: ` label
  names (`engine.extract.speaker`; an assistant's turn gives no facts, a `user: ` label is the entity;
  in a turn of several lines, each labelled line's speaker owns the lines up to the next label),
  else `subject_for(entity_id)`: the entity id itself when it has the form `ent:<id>`, else
  `ent:<slug>`; the facts' `entity_id` is the request's entity, so they stay in its scope (none
  when the request names none: `subject_for(None)` is `ent:user`, the speaker). A fact about a named
  speaker reads with their name ("Melanie is 40 years old"), one about the request's own entity (or an
  `ingest.subject`) with "User".
- `Extracted.upserts`: the stored turn first (UPSERTED), then one outcome per extracted fact, in the
  order of `Extracted.facts`. A negation stores nothing of its own: its outcome's `memory_id` is the
  stored turn that said it (null when the turn is not stored) and `supersedes` lists the facts it
  ended (SUPERSEDED), or none (SKIPPED). `facts` are the records as the store holds them after the
  write (a SKIPPED fact: the existing fact it repeated, so ids match the upserts); a negation, never
  stored, appears as built ("No longer true: ...", `metadata.negated`) under its outcome's id, the
  stored turn, and not at all when the turn is not stored (no memory to name).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

import msgspec

from engine.embed.cache import EmbeddingCache
from engine.extract.base import Extractor, ExtractResult
from engine.extract.rules import RuleExtractor
from engine.extract.rules.text import slug
from engine.extract.speaker import parts_of
from engine.ids import event_id
from engine.ids import memory_id as new_memory_id
from engine.models import Entity, Event, Memory, is_blank
from engine.storage.base import Store
from engine.timeutil import to_utc
from engine.write.ingest import draft_to_memory, order_within_turn, upsert_memories, with_conflict_key
from engine.write.predicates import conflict_key, is_single_valued
from engine.write.results import Extracted, Upsert
from engine.write.supersession import (
    Mode,
    Outcome,
    check_mode,
    lock_keys_of,
    settle_statement,
    statement_end,
)

log = logging.getLogger(__name__)

StoreTurn = Literal["none", "event", "note", "fact"]
STORE_TURN_VALUES: tuple[str, ...] = ("none", "event", "note", "fact")
_ENT = re.compile(r"ent:\S+")
#: the longest subject a memory holds (engine.models.SubjectId)
MAX_SUBJECT = 256
#: facts one turn may write; conversation turns state a handful, a pasted list may state thousands
MAX_FACTS_PER_TURN = 50


def subject_for(entity_id: str | None) -> str:
    """The subject of first-person statements for an entity: `ent:<id>` as is, else `ent:<slug>`."""
    if not entity_id:
        return "ent:user"
    if _ENT.fullmatch(entity_id) and len(entity_id) <= MAX_SUBJECT:
        return entity_id
    return f"ent:{slug(entity_id)}"[:MAX_SUBJECT]


def _ascii_slug(name: str) -> str:
    """`rules.text.slug` as it was when it kept only ASCII (accents folded, every other letter dropped):
    the subjects it gave are found by it (`resubjected`)."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-") or "x"


def resubjected(memory: Memory) -> Memory | None:
    """`memory` with the subject `subject_for` gives its entity now, and its key of that subject, when it
    holds the one the ASCII-only slug gave (every entity id in a script without ASCII letters, such as
    "борис", had `ent:x`; "søren" had `ent:sren`); None when it holds any other (the schema migrations)."""
    entity, subject = memory.entity_id, memory.subject
    if not entity or entity.isascii() or subject is None:
        return None
    if _ENT.fullmatch(entity) and len(entity) <= MAX_SUBJECT:
        return None  # an `ent:` id is its own subject, then as now
    new = subject_for(entity)
    if subject != f"ent:{_ascii_slug(entity)}"[:MAX_SUBJECT] or new == subject:
        return None
    keys = memory.keys
    if keys is not None and memory.predicate:
        old_key, new_key = conflict_key(subject, memory.predicate), conflict_key(new, memory.predicate)
        keys = [new_key if k == old_key else k for k in keys]
    return msgspec.structs.replace(memory, subject=new, keys=keys)


class TurnPlan(msgspec.Struct, kw_only=True):
    """What `commit_turn` will write; built without touching a store."""

    org_id: str
    turn: Memory | None
    extraction: ExtractResult
    mode: Mode
    timestamp: datetime
    namespace: str
    agent_id: str | None
    entity_id: str | None
    #: merged into the metadata of every memory written (the turn's and the facts')
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    #: the tags of every memory written
    tags: list[str] = msgspec.field(default_factory=list)
    #: facts extracted past `MAX_FACTS_PER_TURN`, dropped from `extraction`
    facts_left_out: int = 0
    #: the end of every written memory's validity (the turn's and the facts'); None: open
    valid_to: datetime | None = None

    @property
    def truncated(self) -> bool:
        """Facts of the turn are missing: the extractor's time budget ran out or the limit cut them."""
        return self.extraction.truncated or self.facts_left_out > 0

    def texts(self) -> list[str]:
        """Texts the write will store (turn and facts): embed them before the write."""
        out = [self.turn.text] if self.turn is not None else []
        out.extend(d.text for d in self.extraction.facts if not d.negated)
        return list(dict.fromkeys(out))

    @property
    def writes_anything(self) -> bool:
        return self.turn is not None or bool(self.extraction.facts)


def turn_memory(
    text: str,
    *,
    kind: StoreTurn,
    org_id: str,
    entity_id: str | None,
    namespace: str,
    agent_id: str | None,
    timestamp: datetime,
    now: datetime,
    provenance: dict[str, str] | None = None,
    metadata: dict[str, Any] | None = None,
    tags: Sequence[str] = (),
    keys: Sequence[str] = (),
) -> Memory | None:
    """The memory that stores a turn, or None for `none` or a blank turn. `keys`: a `fact` turn's
    conflict keys (`said_keys`)."""
    if kind == "none" or is_blank(text):
        return None
    if kind not in STORE_TURN_VALUES:
        raise ValueError(f"store_turn must be one of {STORE_TURN_VALUES}")
    ts = to_utc(timestamp)
    created = to_utc(now)
    return Memory(
        memory_id=new_memory_id(),
        org_id=org_id,
        namespace=namespace,
        agent_id=agent_id,
        entity_id=entity_id,
        type=kind,
        text=text,
        metadata={"origin": "turn", **(metadata or {})},
        tags=list(tags),
        timestamp=ts,
        subject=subject_for(entity_id) if kind == "fact" else None,
        keys=list(keys) if kind == "fact" and keys else None,
        valid_from=ts if kind == "fact" else None,
        provenance=dict(provenance or {}),
        created_at=created,
        updated_at=created,
    )


def said_keys(extraction: ExtractResult) -> list[str]:
    """The conflict keys of the single-valued facts a turn states (negations too): a turn stored as a
    `fact` holds until a later value of one of them."""
    return sorted(
        {conflict_key(d.subject, d.predicate) for d in extraction.facts if is_single_valued(d.predicate)}
    )


def plan_turn(
    extractor: Extractor | None,
    text: str,
    *,
    org_id: str,
    entity_id: str | None,
    namespace: str = "default",
    agent_id: str | None = None,
    timestamp: datetime,
    now: datetime,
    store_turn: StoreTurn = "event",
    extract: bool = True,
    mode: Mode = "smart",
    provenance: dict[str, str] | None = None,
    metadata: dict[str, Any] | None = None,
    subject: str | None = None,
    tags: Sequence[str] = (),
    valid_to: datetime | None = None,
) -> TurnPlan:
    """Extract (when asked and an extractor is given) and build the turn memory; store nothing.
    `subject`: who first-person statements are about; by default the speaker a `<Name>: ` label names,
    else `subject_for(entity_id)` (`engine.extract.speaker`: an assistant's turn gives no facts).
    `valid_to`: when every memory written stops being valid (mem0's `expiration_date`)."""
    check_mode(mode)
    ts = to_utc(timestamp)
    if extract and extractor is not None:
        # "yesterday" is a day of the speaker's calendar: the offset they sent, not UTC's
        local = timestamp if timestamp.tzinfo is not None else ts
        extraction = extract_turn(extractor, text, entity_id=entity_id, subject=subject, reference_time=local)
    else:
        extraction = ExtractResult(extractor=getattr(extractor, "name", "rules"))
    left_out = max(0, len(extraction.facts) - MAX_FACTS_PER_TURN)
    if left_out:
        extraction = msgspec.structs.replace(extraction, facts=extraction.facts[:MAX_FACTS_PER_TURN])
    turn = turn_memory(
        text,
        kind=store_turn,
        org_id=org_id,
        entity_id=entity_id,
        namespace=namespace,
        agent_id=agent_id,
        timestamp=ts,
        now=now,
        provenance=provenance,
        metadata=metadata,
        tags=tags,
        keys=said_keys(extraction) if store_turn == "fact" else (),
    )
    if turn is not None and valid_to is not None:
        turn = msgspec.structs.replace(turn, valid_to=to_utc(valid_to))
    return TurnPlan(
        org_id=org_id,
        turn=turn,
        extraction=extraction,
        mode=mode,
        timestamp=ts,
        namespace=namespace,
        agent_id=agent_id,
        entity_id=entity_id,
        metadata=dict(metadata or {}),
        tags=list(tags),
        facts_left_out=left_out,
        valid_to=to_utc(valid_to) if valid_to is not None else None,
    )


def extract_turn(
    extractor: Extractor,
    text: str,
    *,
    entity_id: str | None,
    subject: str | None = None,
    reference_time: datetime,
) -> ExtractResult:
    """The facts of each speaker's part of a turn (`engine.extract.speaker.parts_of`), about `subject`
    when given, else about the speaker; an agent's part gives none. A part that ran out of the
    extractor's time budget ends the turn's extraction (`truncated`); the rule extractor's budget is the
    whole turn's, shared by its parts."""
    own = subject_for(entity_id)
    results: list[ExtractResult] = []
    if isinstance(extractor, RuleExtractor):
        extractor = extractor.for_one_turn()
    for said in parts_of(text):
        if said.kind == "agent" or is_blank(said.body):
            continue
        named = f"ent:{slug(said.name)}" if said.name else None
        about = subject or named or own
        # a named speaker's facts read with their name; the request's own entity's read "User ..."
        name = said.name if said.name and about == named != own else "User"
        result = extractor.extract(said.body, subject=about, reference_time=reference_time, subject_name=name)
        results.append(result)
        if result.truncated:
            break
    if len(results) == 1:
        return results[0]
    entities: dict[str, Entity] = {}
    for e in (e for r in results for e in r.entities):
        entities.setdefault(e.entity_id, e)
    return ExtractResult(
        entities=list(entities.values()),
        facts=[f for r in results for f in r.facts],
        degraded=any(r.degraded for r in results),
        llm_tokens=sum(r.llm_tokens for r in results),
        extractor=results[0].extractor if results else getattr(extractor, "name", "rules"),
        truncated=any(r.truncated for r in results),
    )


class TurnCommit(msgspec.Struct, kw_only=True):
    extracted: Extracted
    #: one per extracted fact, aligned with `extracted.facts` (the turn's outcome is not here)
    outcomes: list[Outcome]
    #: the records built from the drafts (before supersession), aligned with `outcomes`
    built: list[Memory]


def commit_turn(
    store: Store, plan: TurnPlan, *, now: datetime, embeddings: EmbeddingCache | None = None
) -> TurnCommit:
    """Write the plan, and the vectors `embed_for_write` made for its texts, in one transaction
    (joining the caller's) and report what happened."""
    at = to_utc(now)
    upserts: list[Upsert] = []
    with store.transaction():
        if embeddings is not None:
            embeddings.save(plan.texts())
        source_turn: str | None = None
        turn = plan.turn
        ended_by: dict[str, Any] = {}
        if turn is not None and turn.keys and plan.mode == "smart":
            drafts = fact_memories(plan, source_turn=turn.memory_id, now=at)
            # every key this turn reads, at once, as the facts' own write takes them (no lock order)
            lock_keys_of(store, [turn, *(with_conflict_key(m) for m in drafts)])
            # a statement said before a value already stored ends where that value begins
            end = statement_end(store, turn)
            if end is not None and (turn.valid_to is None or end[0] < turn.valid_to):
                turn = msgspec.structs.replace(turn, status="superseded", valid_to=end[0])
                ended_by = {"history": True, "superseded_by": end[1]}
        if turn is not None:
            store.put_memories([turn])
            store.append_events(
                [
                    Event(
                        event_id=event_id(),
                        org_id=plan.org_id,
                        type="memory.created",
                        at=at,
                        memory_id=turn.memory_id,
                        entity_id=turn.entity_id,
                        data={"namespace": plan.namespace, "type": turn.type, "origin": "turn", **ended_by},
                    )
                ]
            )
            source_turn = turn.memory_id
            upserts.append(Upsert(memory_id=turn.memory_id, action="UPSERTED"))
        built: list[Memory] = []
        outcomes: list[Outcome] = []
        if plan.extraction.facts:
            built = fact_memories(plan, source_turn=source_turn, now=at)
            outcomes = upsert_memories(
                store, built, mode=plan.mode, negated=[d.negated for d in plan.extraction.facts], now=at
            )
            if turn is not None and turn.keys and plan.mode == "smart":
                settle_statement(store, turn.memory_id, plan.org_id, at)
        facts = _as_stored(store, plan.org_id, built, outcomes, source_turn)
    upserts.extend(
        Upsert(
            memory_id=source_turn if o.negation else o.memory_id or m.memory_id,
            action=o.action,
            supersedes=list(o.supersedes),
            resumed=list(o.resumed),
        )
        for m, o in zip(built, outcomes, strict=True)
    )
    extracted = Extracted(
        entities=list(plan.extraction.entities),
        facts=facts,
        upserts=upserts,
        truncated=plan.truncated,
        facts_left_out=plan.facts_left_out,
    )
    return TurnCommit(extracted=extracted, outcomes=outcomes, built=built)


def fact_memories(plan: TurnPlan, *, source_turn: str | None, now: datetime) -> list[Memory]:
    """The plan's drafts as fact memories (engine.write.ingest.draft_to_memory) with the plan's metadata
    merged in, its tags and its valid_to, a later statement of the same key ordered after an earlier one
    (engine.write.ingest)."""
    built = []
    for d in plan.extraction.facts:
        m = draft_to_memory(
            d,
            org_id=plan.org_id,
            timestamp=plan.timestamp,
            namespace=plan.namespace,
            agent_id=plan.agent_id,
            entity_id=plan.entity_id,
            source_turn=source_turn,
            extractor=plan.extraction.extractor,
            now=now,
        )
        if plan.metadata:
            m = msgspec.structs.replace(m, metadata={**m.metadata, **plan.metadata})
        if plan.tags:
            m = msgspec.structs.replace(m, tags=list(plan.tags))
        if plan.valid_to is not None:
            m = msgspec.structs.replace(m, valid_to=plan.valid_to)
        if plan.entity_id is None:  # a turn of no entity (mem0's run, app or agent alone) stays so
            m = msgspec.structs.replace(m, entity_id=None)
        built.append(m)
    return order_within_turn(built)


def _as_stored(
    store: Store, org_id: str, built: Sequence[Memory], outcomes: Sequence[Outcome], source_turn: str | None
) -> list[Memory]:
    """Each fact as the store now holds it (a SKIPPED one: the existing fact it repeated); a negation,
    which is never stored, as built under the id its outcome names (the stored turn that said it), and
    left out when no turn was stored: an id in `extracted` always names a memory that exists."""
    wanted = [
        o.memory_id if o.memory_id is not None and not o.negation else m.memory_id
        for m, o in zip(built, outcomes, strict=True)
    ]
    found = {m.memory_id: m for m in store.get_memories(org_id, wanted)}
    facts: list[Memory] = []
    for w, m, o in zip(wanted, built, outcomes, strict=True):
        if not o.negation:
            facts.append(found.get(w, m))
        elif source_turn is not None:
            facts.append(msgspec.structs.replace(m, memory_id=source_turn))
    return facts


def embed_for_write(cache: EmbeddingCache | None, texts: Sequence[str]) -> bool:
    """Embed the texts of memories about to be stored, outside any transaction; the write's own
    transaction stores the vectors (`EmbeddingCache.save`, which `commit_turn`, `upsert_memories` and
    `MemoryService.insert` call). Never raises: an embedder failure leaves the memories without
    vectors (`loci doctor` embeds them later) and returns False (the caller reports `flags.degraded`)."""
    if cache is None or not texts:
        return True
    try:
        cache.embed(list(texts), persist=True, defer=True)
    except Exception:
        log.warning("embedding %d memory texts failed; stored without vectors", len(texts), exc_info=True)
        return False
    return True
