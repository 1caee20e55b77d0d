"""An adapter's logic written once as a plan: a generator that yields the client calls it needs (`Step`s)
and receives each answer, so the same plan runs on `LociClient` (`run`) and `AsyncLociClient` (`arun`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from typing import Any, TypeVar

import msgspec

from loci.client import (
    AsyncLociClient,
    LociClient,
    LociClientError,
    Memory,
    MemoryCreate,
    MemoryList,
    NotFoundError,
    RecallRequest,
)
from loci.wire.writes import MAX_BATCH, MAX_BODY_BYTES

T = TypeVar("T")
PAGE_SIZE = 200  # the API's largest page
_ENVELOPE = len(b'{"items":[]}')  # the bytes of POST /v0/memories' body around its drafts


class ListPage(msgspec.Struct, frozen=True, kw_only=True):
    """One page of GET /v0/memories; answered with a `MemoryList`."""

    filters: dict[str, str]
    cursor: str | None = None
    page_size: int = PAGE_SIZE


class CreateMany(msgspec.Struct, frozen=True):
    """One POST /v0/memories of at most MAX_BATCH drafts in at most MAX_BODY_BYTES (all stored or none);
    answered with `list[Memory]`."""

    drafts: list[MemoryCreate]


class Delete(msgspec.Struct, frozen=True):
    """DELETE /v0/memories/{id}; a memory already gone counts as deleted. Answered with None."""

    memory_id: str


class Recall(msgspec.Struct, frozen=True):
    """POST /v0/recall; answered with a `RecallResponse`."""

    request: RecallRequest


Step = ListPage | CreateMany | Delete | Recall
Plan = Generator[Step, Any, T]


def run(plan: Plan[T], client: LociClient) -> T:
    """The plan's result; a step's error is raised in the plan, where it may undo what it did."""
    answer: Any = None
    failure: Exception | None = None
    while True:
        try:
            step = plan.send(answer) if failure is None else plan.throw(failure)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        answer, failure = None, None
        try:
            answer = _send(step, client)
        except Exception as exc:
            failure = exc


async def arun(plan: Plan[T], client: AsyncLociClient) -> T:
    """`run` on the async client."""
    answer: Any = None
    failure: Exception | None = None
    while True:
        try:
            step = plan.send(answer) if failure is None else plan.throw(failure)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        answer, failure = None, None
        try:
            answer = await _asend(step, client)
        except Exception as exc:
            failure = exc


def _send(step: Step, client: LociClient) -> Any:
    if isinstance(step, ListPage):
        return client.list_memories(page_size=step.page_size, cursor=step.cursor, **step.filters)
    if isinstance(step, CreateMany):
        return client.create_memories(step.drafts)
    if isinstance(step, Recall):
        return client.recall(step.request)
    with contextlib.suppress(NotFoundError):
        client.delete_memory(step.memory_id)
    return None


async def _asend(step: Step, client: AsyncLociClient) -> Any:
    if isinstance(step, ListPage):
        return await client.list_memories(page_size=step.page_size, cursor=step.cursor, **step.filters)
    if isinstance(step, CreateMany):
        return await client.create_memories(step.drafts)
    if isinstance(step, Recall):
        return await client.recall(step.request)
    with contextlib.suppress(NotFoundError):
        await client.delete_memory(step.memory_id)
    return None


def scan(filters: dict[str, str], visit: Callable[[Memory], bool], page_size: int = PAGE_SIZE) -> Plan[None]:
    """Every memory the filters select, page by page, to `visit` until it returns True."""
    cursor: str | None = None
    while True:
        page: MemoryList = yield ListPage(filters=filters, cursor=cursor, page_size=page_size)
        for memory in page.items:
            if visit(memory):
                return
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def first(filters: dict[str, str]) -> Plan[Memory | None]:
    """The first memory the filters select, if any."""
    page: MemoryList = yield ListPage(filters=filters, page_size=1)
    return page.items[0] if page.items else None


def create_all(drafts: list[MemoryCreate]) -> Plan[list[Memory]]:
    """The drafts stored in order, in batches (`batches`), all or none: when a batch fails, the memories
    of the batches before it are deleted again and its error raised."""
    made: list[Memory] = []
    try:
        for batch in batches(drafts):
            made += yield CreateMany(batch)
    except Exception:
        for memory in made:
            with contextlib.suppress(LociClientError):  # the first error is the one to raise
                yield Delete(memory.memory_id)
        raise
    return made


def batches(drafts: list[MemoryCreate]) -> list[list[MemoryCreate]]:
    """The drafts in order, split into the fewest runs the server takes as one POST /v0/memories each: at
    most MAX_BATCH drafts whose body is at most MAX_BODY_BYTES (a draft too large alone goes alone, and the
    server's 413 says so)."""
    runs: list[list[MemoryCreate]] = []
    size = 0
    for draft in drafts:
        grown = len(msgspec.json.encode(draft)) + 1  # the draft and its comma
        if not runs or len(runs[-1]) >= MAX_BATCH or size + grown > MAX_BODY_BYTES:
            runs.append([])
            size = _ENVELOPE - 1  # the first draft has no comma
        runs[-1].append(draft)
        size += grown
    return runs
