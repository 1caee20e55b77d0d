"""Per-row filter columns of one (org, namespace) index and the vectorized Scope mask.

The mask is the exact twin of `engine.storage.scope_filter.in_scope` (org and namespace are implied by
the index): live, not archived, entity/agent equal when set, one of `memory_ids` when set, and
- as_of None: valid_from (when set) <= now and either status == 'active' and valid_to > now
  (valid_to None is +infinity; not checked when `expired`), or status == 'disputed' and
  valid_to > now, or status == 'superseded' and now < valid_to < +infinity;
- as_of set: (valid_from or timestamp) <= as_of and valid_to > as_of.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.models import Memory, speaker_name
from engine.storage.base import Scope
from engine.storage.local_index.growable import Growable
from engine.timeutil import to_micros

INF = np.iinfo(np.int64).max
#: the `begins` of a memory with no valid_from: it holds from whenever it was said
NO_START = np.iinfo(np.int64).min


Mask = npt.NDArray[np.bool_]


class Codes:
    """Strings to small ints (0, 1, ...); -1 stands for None."""

    def __init__(self) -> None:
        self.code_of: dict[str, int] = {}
        self.names: list[str] = []

    def add(self, value: str | None) -> int:
        if value is None:
            return -1
        code = self.code_of.get(value)
        if code is None:
            code = len(self.names)
            self.code_of[value] = code
            self.names.append(value)
        return code

    def get(self, value: str) -> int | None:
        return self.code_of.get(value)


def _begins(m: Memory) -> int:
    return NO_START if m.valid_from is None else to_micros(m.valid_from)


def _speaker(m: Memory) -> str | None:
    return speaker_name(m.text) if m.type == "event" else None


class Columns:
    def __init__(self) -> None:
        self.memory_ids: list[str] = []
        self.row_of: dict[str, int] = {}
        self.entities = Codes()
        self.agents = Codes()
        self.statuses = Codes()
        self.statuses.add("active")  # code 0
        self.statuses.add("superseded")  # code 1
        self.statuses.add("disputed")  # code 2
        self.types = Codes()
        self.speakers = Codes()  # the "<Name>: " an event's text starts with
        self.live = Growable(np.bool_, False)
        self.archived = Growable(np.bool_, False)
        self.entity = Growable(np.int32, -1)
        self.agent = Growable(np.int32, -1)
        self.status = Growable(np.int16, -1)
        self.type = Growable(np.int16, -1)
        self.start = Growable(np.int64, 0)  # Memory.holds_from
        self.begins = Growable(np.int64, 0)  # Memory.valid_from, NO_START when not set
        self.valid_to = Growable(np.int64, INF)
        self.ts = Growable(np.int64, 0)
        self.speaker = Growable(np.int32, -1)
        self.dead = 0

    @property
    def n(self) -> int:
        return len(self.memory_ids)

    @property
    def n_live(self) -> int:
        return len(self.row_of)

    def append(self, m: Memory) -> int:
        row = len(self.memory_ids)
        self.memory_ids.append(m.memory_id)
        self.row_of[m.memory_id] = row
        self.live.append(True)
        self.archived.append(bool(m.archived))
        self.entity.append(self.entities.add(m.entity_id))
        self.agent.append(self.agents.add(m.agent_id))
        self.status.append(self.statuses.add(m.status))
        self.type.append(self.types.add(m.type))
        self.start.append(to_micros(m.holds_from))
        self.begins.append(_begins(m))
        self.valid_to.append(INF if m.valid_to is None else to_micros(m.valid_to))
        self.ts.append(to_micros(m.timestamp))
        self.speaker.append(self.speakers.add(_speaker(m)))
        return row

    def append_bulk(self, memories: Sequence[Memory]) -> int:
        """Append many rows; returns the first new row. The caller has killed earlier rows of these ids."""
        first = len(self.memory_ids)
        for i, m in enumerate(memories):
            self.memory_ids.append(m.memory_id)
            self.row_of[m.memory_id] = first + i
        self.live.extend(np.ones(len(memories), dtype=np.bool_))
        self.archived.extend([bool(m.archived) for m in memories])
        self.entity.extend([self.entities.add(m.entity_id) for m in memories])
        self.agent.extend([self.agents.add(m.agent_id) for m in memories])
        self.status.extend([self.statuses.add(m.status) for m in memories])
        self.type.extend([self.types.add(m.type) for m in memories])
        self.start.extend([to_micros(m.holds_from) for m in memories])
        self.begins.extend([_begins(m) for m in memories])
        self.valid_to.extend([INF if m.valid_to is None else to_micros(m.valid_to) for m in memories])
        self.ts.extend([to_micros(m.timestamp) for m in memories])
        self.speaker.extend([self.speakers.add(_speaker(m)) for m in memories])
        return first

    def kill(self, memory_id: str) -> int | None:
        row = self.row_of.pop(memory_id, None)
        if row is not None:
            self.live[row] = False
            self.dead += 1
        return row

    def mask(self, scope: Scope) -> Mask:
        """The rows `scope` may see (kept by the ScopeView that asks)."""
        mask: Any = self.live.view & ~self.archived.view
        if scope.entity_id is not None:
            code = self.entities.get(scope.entity_id)
            if code is None:
                return np.zeros(self.n, dtype=np.bool_)
            mask &= self.entity.view == code
        if scope.agent_id is not None:
            code = self.agents.get(scope.agent_id)
            if code is None:
                return np.zeros(self.n, dtype=np.bool_)
            mask &= self.agent.view == code
        if scope.memory_ids is not None:
            chosen = np.zeros(self.n, dtype=np.bool_)
            rows = [self.row_of[i] for i in scope.memory_ids if i in self.row_of]
            chosen[np.asarray(rows, dtype=np.int64)] = True
            mask &= chosen
        if scope.as_of is None:
            now = to_micros(scope.now)
            mask &= self.begins.view <= now
            active = self.status.view == 0
            if not scope.expired:
                active &= self.valid_to.view > now
            active |= (self.status.view == 2) & (self.valid_to.view > now)
            ends_later = (self.status.view == 1) & (self.valid_to.view > now) & (self.valid_to.view < INF)
            mask &= active | ends_later
        else:
            as_of = to_micros(scope.as_of)
            mask &= self.start.view <= as_of
            mask &= self.valid_to.view > as_of
        return np.asarray(mask, dtype=np.bool_)
