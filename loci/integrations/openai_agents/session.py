"""`LociSession`: an OpenAI Agents SDK session whose items are Loci events.

Each item is one `event` memory: its text is the item as a line of transcript (`items.text_of`), its
metadata["openai_agents"] holds the session id, a sequence number and the item itself; every item of the
session carries the session's tag ("oa-session:<id>"). Order is the sequence number: `add_items` reads
the last one, numbers the new items after it and stamps them one microsecond apart (the API's resolution),
each later than the item before, so timestamps rise along the sequence and the newest items are the first
of the timestamp-ordered listing: the tail is read without reading the whole session.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec
from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit

from loci.client import (
    AsyncLociClient,
    LociClientError,
    Memory,
    MemoryCreate,
    NotFoundError,
    PruneRequest,
)
from loci.integrations.openai_agents.items import text_of
from loci.integrations.plans import batches
from loci.integrations.tags import scope_tag

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

METADATA_KEY = "openai_agents"
SESSION_TAG = "openai-agents"  # on every item of every session
PAGE_SIZE = 200  # the API's largest page
TICK = timedelta(microseconds=1)  # the API's resolution of a timestamp: one item's step along the sequence


class Entry(msgspec.Struct, kw_only=True):
    """metadata["openai_agents"] of an item's memory."""

    session_id: str
    seq: int
    item: dict[str, Any]


class Stored(msgspec.Struct, frozen=True, kw_only=True):
    memory_id: str
    timestamp: datetime
    entry: Entry


def session_tag(session_id: str) -> str:
    return scope_tag("oa-session:", session_id)


def stored_of(memory: Memory, session_id: str) -> Stored | None:
    raw = memory.metadata.get(METADATA_KEY)
    try:
        entry = msgspec.convert(raw, Entry, strict=False)
    except msgspec.ValidationError:
        return None
    if entry.session_id != session_id:
        return None
    return Stored(memory_id=memory.memory_id, timestamp=memory.timestamp, entry=entry)


class LociSession:
    """`LociSession(session_id, base_url, api_key)`, from $LOCI_URL and $LOCI_API_KEY when omitted; the key
    needs the read and write scopes.

    - `entity_id`: who the conversation is about, so Loci's assemble and recall for that entity see it
      (default: none, the session alone);
    - `namespace`: the Loci namespace of the events (default "default");
    - `agent`: the `X-Service-Agent` the events are written as;
    - `session_settings`: the SDK's `SessionSettings` or a dict of its fields, as the SDK's own sessions
      take them (its `limit` caps `get_items` when no limit is passed);
    - `client`: an `AsyncLociClient` of your own.

    One writer per session at a time (as the SDK's Runner does): two concurrent `add_items` may number
    items alike, and then read back in the order of their memory ids.
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        entity_id: str | None = None,
        namespace: str = "default",
        agent: str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        client: AsyncLociClient | None = None,
    ) -> None:
        self.session_id = session_id
        # the SDK's coercion, as its own sessions do: its Runner reads `session_settings.limit`
        self.session_settings = (
            coerce_session_settings(session_settings) if session_settings is not None else SessionSettings()
        )
        self.entity_id = entity_id
        self.namespace = namespace
        self.agent = agent
        self.client = client or AsyncLociClient(base_url, api_key)
        self.tag = session_tag(session_id)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items in order; with a limit, its latest `limit` items (still in order); a negative
        limit is none, as SQLite reads a negative LIMIT in the SDK's SQLiteSession."""
        limit = resolve_session_limit(limit, self.session_settings)
        if limit == 0:
            return []
        tail = await self._tail(None if limit is None or limit < 0 else limit)
        return [stored.entry.item for stored in tail]  # type: ignore[misc]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        if not items:
            return
        last = await self._tail(1)
        seq = last[-1].entry.seq + 1 if last else 0
        now = datetime.now(UTC)
        stamp = max(now, last[-1].timestamp + TICK) if last else now
        drafts = [self._draft(dict(item), seq + i, stamp + i * TICK) for i, item in enumerate(items)]
        made: list[Memory] = []
        try:
            for batch in batches(drafts):  # the server's limits on one request: items and bytes
                made += await self.client.create_memories(batch, agent=self.agent)
        except Exception:
            # all items or none, as the SDK's own sessions add them in one transaction
            for memory in made:
                with contextlib.suppress(LociClientError):
                    await self.client.delete_memory(memory.memory_id)
            raise

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item (None when the session is empty)."""
        while last := await self._tail(1):
            try:
                await self.client.delete_memory(last[-1].memory_id)
            except NotFoundError:  # another pop took it first: take the next one
                continue
            return last[-1].entry.item  # type: ignore[return-value]
        return None

    async def clear_session(self) -> None:
        """Delete every item of the session (one prune: all or none)."""
        await self.client.prune(
            PruneRequest(
                namespace=self.namespace,
                entity_id=self.entity_id,
                tags=[self.tag],
                action="delete",
                dry_run=False,
            )
        )

    async def close(self) -> None:
        await self.client.aclose()

    # --- reading ---------------------------------------------------------------------------------------
    def _filters(self) -> dict[str, str]:
        filters = {"namespace": self.namespace, "tag": self.tag, "sort": "timestamp_desc"}
        if self.entity_id is not None:
            filters["entity_id"] = self.entity_id
        return filters

    async def _tail(self, limit: int | None) -> list[Stored]:
        """The last `limit` items (all when None) in sequence order. Reads newest first and stops at the
        first memory older than every item kept once `limit` are kept: timestamps never decrease along the
        sequence, so nothing older can come later in it. Items that share a timestamp (written by two
        writers at once, or by an add_items that stamped a whole batch alike) are read past in full pages."""
        kept: list[Stored] = []
        cursor: str | None = None
        page_size = PAGE_SIZE if limit is None else min(PAGE_SIZE, limit + 1)
        while True:
            page = await self.client.list_memories(page_size=page_size, cursor=cursor, **self._filters())
            page_size = PAGE_SIZE
            for memory in page.items:
                if limit is not None and len(kept) >= limit and memory.timestamp < kept[-1].timestamp:
                    return _last(kept, limit)
                stored = stored_of(memory, self.session_id)
                if stored is not None:
                    kept.append(stored)
            if page.next_cursor is None:
                return _last(kept, limit)
            cursor = page.next_cursor

    def _draft(self, item: dict[str, Any], seq: int, stamp: datetime) -> MemoryCreate:
        entry = Entry(session_id=self.session_id, seq=seq, item=item)
        return MemoryCreate(
            namespace=self.namespace,
            entity_id=self.entity_id,
            type="event",
            text=text_of(item),
            metadata={METADATA_KEY: msgspec.to_builtins(entry)},
            tags=[SESSION_TAG, self.tag],
            timestamp=stamp,
        )


def _last(kept: list[Stored], limit: int | None) -> list[Stored]:
    ordered = sorted(kept, key=lambda s: (s.entry.seq, s.memory_id))
    return ordered if limit is None else ordered[-limit:]
