"""ScopeView: what one scope sees of a NamespaceIndex at one generation.

Every search of a scope reads the same derived data: the mask of eligible rows, the keyword
statistics over them (N, avgdl, df), the events per speaker, the in-scope events in time order. A
view computes each on first use and keeps it; the index keeps its last few views and forgets them all
when its generation moves (every row or vector change bumps it), so one write invalidates one thing.
Two scopes with equal masks (a request's `now` moved, nothing else) share one view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from engine.storage.local_index.bm25 import ScopeStats
from engine.storage.local_index.columns import Mask

if TYPE_CHECKING:
    from engine.storage.local_index.namespace import NamespaceIndex

IntArray = npt.NDArray[np.int64]


class ScopeView:
    def __init__(self, idx: NamespaceIndex, mask: Mask) -> None:
        self.generation = idx.generation
        self._idx = idx
        mask.flags.writeable = False  # shared by every search of the scope
        self.mask = mask
        self._stats: ScopeStats | None = None
        self._speakers: tuple[IntArray, int] | None = None
        self._events: IntArray | None = None

    def keyword_stats(self) -> ScopeStats:
        if self._stats is None:
            self._stats = self._idx.keywords.scope_stats(self.mask, self._idx.cols.live.view)
        return self._stats

    def speakers(self) -> tuple[IntArray, int]:
        """Events per speaker code (at code + 1; 0 counts events without one), and the events."""
        if self._speakers is None:
            cols = self._idx.cols
            code = cols.types.get("event")
            events = self.mask & (cols.type.view == code) if code is not None else np.zeros_like(self.mask)
            spoken = np.bincount(cols.speaker.view[events] + 1, minlength=len(cols.speakers.names) + 1)
            self._speakers = (spoken.astype(np.int64), int(events.sum()))
        return self._speakers

    def events(self) -> IntArray:
        """The in-scope event rows in (timestamp, memory_id) order."""
        if self._events is None:
            every = self._idx.event_rows()
            self._events = every[self.mask[every]]
        return self._events
