"""Scope semantics of `engine.storage.base.Scope` as one predicate over a Memory, plus helpers.

A memory is a retrieval candidate under a scope when:
- org_id and namespace match; entity_id / agent_id match when the scope sets them;
- it is one of the scope's `memory_ids` when the scope sets them;
- it is not archived;
- `as_of` None (a read as of now): valid_from is None or valid_from <= now, so a value stated to begin
  later is not current yet (a timestamp is when it was said, not a validity: a client's clock a little
  ahead must not hide what it just wrote), and either status == 'active' and (valid_to is None or
  valid_to > now; not checked when `expired`), or status == 'disputed' (two values of one key that
  tie: a reader sees both, not neither) and not ended (valid_to is None or valid_to > now), or status
  == 'superseded' by a value that begins after now (valid_to > now): it holds until then;
- `as_of` set: status ignored; (valid_from or timestamp) <= as_of and (valid_to is None or valid_to > as_of).

`as_seen` is a memory as a reader at `as_of` knows it: an end after `as_of` had not happened then.

All time comparisons are done on exact integer microseconds (`engine.timeutil.to_micros`).
The vectorized twin of this predicate lives in `engine.storage.local_index.columns`.
"""

from __future__ import annotations

import msgspec

from engine.models import Memory
from engine.storage.base import Scope
from engine.timeutil import to_micros


def in_scope(memory: Memory, scope: Scope) -> bool:
    if memory.org_id != scope.org_id or memory.namespace != scope.namespace:
        return False
    if scope.entity_id is not None and memory.entity_id != scope.entity_id:
        return False
    if scope.agent_id is not None and memory.agent_id != scope.agent_id:
        return False
    if scope.memory_ids is not None and memory.memory_id not in scope.memory_ids:
        return False
    if memory.archived:
        return False
    valid_to = to_micros(memory.valid_to) if memory.valid_to is not None else None
    if scope.as_of is None:
        now = to_micros(scope.now)
        if memory.valid_from is not None and to_micros(memory.valid_from) > now:
            return False
        if memory.status == "superseded":
            return valid_to is not None and valid_to > now
        if memory.status == "disputed":  # ended only by a later value: never an expiry to show
            return valid_to is None or valid_to > now
        if memory.status != "active":
            return False
        return scope.expired or valid_to is None or valid_to > now
    as_of = to_micros(scope.as_of)
    if to_micros(memory.holds_from) > as_of:
        return False
    return valid_to is None or valid_to > as_of


def as_seen(memory: Memory, scope: Scope) -> Memory:
    """`memory` as a reader at the scope's `as_of` knows it: an end after `as_of` (a later value, a
    negation, an expiry) had not happened yet, so the memory is shown open-ended, and active when a
    later value superseded it. Unchanged without `as_of`, or when it ended by then."""
    if scope.as_of is None or memory.valid_to is None or to_micros(memory.valid_to) <= to_micros(scope.as_of):
        return memory
    status = "active" if memory.status == "superseded" else memory.status
    return msgspec.structs.replace(memory, valid_to=None, status=status)


def memory_entities(memory: Memory) -> list[str]:
    """The entity-graph nodes a memory touches: entity_id, subject and an entity-valued object
    (object_type 'entity', or a string object starting with 'ent:'). Order kept, duplicates removed."""
    found: list[str] = []
    for value in (memory.entity_id, memory.subject):
        if value is not None and value not in found:
            found.append(value)
    obj = memory.object
    is_entity = (
        isinstance(obj, str) and obj != "" and (memory.object_type == "entity" or obj.startswith("ent:"))
    )
    if is_entity and isinstance(obj, str) and obj not in found:
        found.append(obj)
    return found
