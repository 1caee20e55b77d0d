"""Each API call as data (method, path, body, query, answer type, whether it writes), with the headers
every attempt sends and the reading of its answer: the sync and async clients send the same `Call`s the
same way, so they cannot drift apart. Bodies and answers are the server's own wire Structs."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from loci.client.errors import APIError, ConnectionFailed, InvalidRequest, UnexpectedAnswer, error_for
from loci.client.retry import RetryPolicy
from loci.client.sse import MEDIA_TYPE, StreamedEvent
from loci.wire.health import Health
from loci.wire.memories import Deleted, MemoryBatch, MemoryItems, MemoryList
from loci.wire.models import Memory
from loci.wire.ops import EventList, SummarizeRequest, SummarizeResponse
from loci.wire.options import AssembleRequest, RecallRequest
from loci.wire.prune import PruneRequest, PruneResult
from loci.wire.responses import AssembleResponse, RecallResponse
from loci.wire.writes import MemoryCreate, MemoryPatch

T = TypeVar("T")
AGENT_HEADER = "X-Service-Agent"
IDEMPOTENCY_HEADER = "Idempotency-Key"
EVENTS_PATH = "/v0/observability/events"
#: C0 and C1 controls and DEL: CR or LF would end the header, and none is text a header can carry
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class Call(msgspec.Struct, Generic[T], kw_only=True):
    method: str
    path: str
    answer: type[T]
    body: bytes | None = None
    params: dict[str, str] = msgspec.field(default_factory=dict)
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    #: a logical write: sent with one Idempotency-Key for all its attempts
    writes: bool = False


def header_value(name: str, value: str) -> bytes:
    """`value` as UTF-8, as the server reads X-Service-Agent and Idempotency-Key (httpx would encode a str
    as ASCII only); a control character or a lone surrogate raises InvalidRequest, naming no value (it may
    be the API key)."""
    found = CONTROL.search(value)
    if found is not None:
        raise InvalidRequest(
            f"{name} cannot contain a control character (U+{ord(found.group()):04X} at index {found.start()})"
        )
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequest(f"{name} is not valid Unicode (a lone surrogate at index {exc.start})") from None


def encode_headers(headers: Mapping[str, str]) -> dict[bytes, bytes]:
    return {name.encode("ascii"): header_value(name, value) for name, value in headers.items()}


def request_headers(call: Call[Any], idempotency_key: str | None) -> dict[bytes, bytes]:
    """The headers of every attempt of `call`: one key for all attempts of a logical write, so a retry
    never writes twice. A value that cannot be sent raises InvalidRequest here, before any attempt."""
    headers = dict(call.headers)
    if call.writes:
        headers[IDEMPOTENCY_HEADER] = idempotency_key or uuid.uuid4().hex
    if call.body is not None:
        headers["Content-Type"] = "application/json"
    return encode_headers(headers)


def error_of(r: httpx.Response) -> APIError:
    return error_for(r.status_code, r.content, r.headers.get("X-Request-Id"))


def answer(call: Call[T], r: httpx.Response) -> T:
    """The decoded answer of `call`; an error answer raises its APIError, a success that is not the
    call's answer type raises UnexpectedAnswer."""
    if r.is_error:
        raise error_of(r)
    try:
        return msgspec.json.decode(r.content, type=call.answer)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise UnexpectedAnswer(
            f"{call.method} {call.path}: {r.status_code} is not a {call.answer.__name__}: {exc}",
            status=r.status_code,
            request_id=r.headers.get("X-Request-Id"),
        ) from exc


def check_stream(r: httpx.Response) -> None:
    """A success answer to the event stream's request that is no event stream (another server at the
    URL) raises UnexpectedAnswer: reading it as one would end at once with no event and no error."""
    kind = r.headers.get("Content-Type", "").split(";")[0].strip().lower()
    if kind != "text/event-stream":
        raise UnexpectedAnswer(
            f"GET {EVENTS_PATH}: {r.status_code} is not an event stream ({kind or 'no content type'})",
            status=r.status_code,
            request_id=r.headers.get("X-Request-Id"),
        )


def unbounded_body(r: httpx.Response) -> None:
    """Lift the read timeout for the body of a stream whose headers came within the client's timeout:
    events may be minutes apart. httpcore reads the request's timeout extension when the body starts."""
    r.request.extensions["timeout"] = {**r.request.extensions.get("timeout", {}), "read": None}


def segment(value: str) -> str:
    """`value` as exactly one path segment: `/ ? # %` and the rest percent-encoded, and a lone `.` or
    `..` too, which URL resolution would otherwise take for this folder or its parent."""
    if not value:
        raise ValueError("a path segment cannot be empty")
    encoded = quote(value, safe="")
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def _body(value: Any) -> bytes:
    return msgspec.json.encode(value)


def _agent(agent: str | None) -> dict[str, str]:
    return {AGENT_HEADER: agent} if agent else {}


def _query(values: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, datetime):
            out[key] = value.isoformat()
        elif isinstance(value, list | tuple):
            out[key] = ",".join(str(v) for v in value)
        else:
            out[key] = str(value)
    return out


def health() -> Call[Health]:
    return Call(method="GET", path="/v0/health", answer=Health)


def create_memory(draft: MemoryCreate, agent: str | None = None) -> Call[Memory]:
    return Call(
        method="POST",
        path="/v0/memories",
        answer=Memory,
        body=_body(draft),
        headers=_agent(agent),
        writes=True,
    )


def create_memories(drafts: Sequence[MemoryCreate], agent: str | None = None) -> Call[MemoryItems]:
    return Call(
        method="POST",
        path="/v0/memories",
        answer=MemoryItems,
        body=_body(MemoryBatch(items=list(drafts))),
        headers=_agent(agent),
        writes=True,
    )


def get_memory(memory_id: str) -> Call[Memory]:
    return Call(method="GET", path=f"/v0/memories/{segment(memory_id)}", answer=Memory)


def update_memory(memory_id: str, patch: MemoryPatch) -> Call[Memory]:
    return Call(
        method="PATCH",
        path=f"/v0/memories/{segment(memory_id)}",
        answer=Memory,
        body=_body(patch),
        writes=True,
    )


def delete_memory(memory_id: str) -> Call[Deleted]:
    return Call(method="DELETE", path=f"/v0/memories/{segment(memory_id)}", answer=Deleted, writes=True)


#: GET /v0/memories' filters: a misspelt one is an error here, not a list of the whole org
LIST_FILTERS = frozenset(
    {"namespace", "entity_id", "agent_id", "type", "status", "tag", "archived", "since", "until", "q", "sort"}
)


def list_memories(
    filters: Mapping[str, Any], *, page_size: int, cursor: str | None, agent: str | None = None
) -> Call[MemoryList]:
    unknown = sorted(set(filters) - LIST_FILTERS)
    if unknown:
        raise TypeError(
            f"list_memories() got an unknown filter {unknown[0]!r} (filters: {sorted(LIST_FILTERS)})"
        )
    params = _query({**filters, "page_size": page_size, "cursor": cursor})
    return Call(method="GET", path="/v0/memories", answer=MemoryList, params=params, headers=_agent(agent))


def assemble(request: AssembleRequest, agent: str | None = None) -> Call[AssembleResponse]:
    return Call(
        method="POST",
        path="/v0/context/assemble",
        answer=AssembleResponse,
        body=_body(request),
        headers=_agent(agent),
        writes=True,
    )


def recall(request: RecallRequest, agent: str | None = None) -> Call[RecallResponse]:
    return Call(
        method="POST", path="/v0/recall", answer=RecallResponse, body=_body(request), headers=_agent(agent)
    )


def summarize(request: SummarizeRequest, agent: str | None = None) -> Call[SummarizeResponse]:
    return Call(
        method="POST",
        path="/v0/summarize",
        answer=SummarizeResponse,
        body=_body(request),
        headers=_agent(agent),
    )


def prune(request: PruneRequest, agent: str | None = None) -> Call[PruneResult]:
    return Call(
        method="POST",
        path="/v0/prune",
        answer=PruneResult,
        body=_body(request),
        headers=_agent(agent),
        writes=True,
    )


def list_events(
    *,
    type: str | None = None,
    entity_id: str | None = None,
    memory_id: str | None = None,
    since: datetime | None = None,
    limit: int = 100,
    cursor: str | None = None,
) -> Call[EventList]:
    params = _query(
        {
            "type": type,
            "entity_id": entity_id,
            "memory_id": memory_id,
            "since": since,
            "limit": limit,
            "cursor": cursor,
        }
    )
    return Call(method="GET", path=EVENTS_PATH, answer=EventList, params=params)


class EventStream:
    """One `stream_events` over all its connections: what each asks for, and whether an end is the one
    the caller asked for. The server ends a stream after `max_events` events or `timeout` seconds (both
    optional): the caller's end, after which the stream is over. Any other end, a dropped connection or
    the server ending it before then (it is stopping, or the key was revoked), is resumed after the last
    event seen (Last-Event-ID) with what is left of `max_events` and `timeout`, after the retry policy's
    wait; `max_retries` such ends in a row without an event between them raise ConnectionFailed."""

    def __init__(
        self,
        *,
        after: str | None,
        max_events: int | None,
        timeout: float | None,
        filters: Mapping[str, str | None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.after = after
        self.max_events = max_events
        self.timeout = timeout
        self.filters = dict(filters)
        self.clock = clock
        self.deadline: float | None = None  # set when the first connection is made
        self.seen = 0
        self.failures = 0  # ends in a row without an event

    def params(self) -> dict[str, str]:
        """The query of the next connection: the filters and what is left of `max_events` and `timeout`."""
        left = None if self.max_events is None else self.max_events - self.seen
        time_left = self.timeout
        if self.timeout is not None:
            now = self.clock()
            if self.deadline is None:
                self.deadline = now + self.timeout
            else:
                time_left = max(0.0, self.deadline - now)
        return _query({**self.filters, "max_events": left, "timeout": time_left})

    def headers(self) -> dict[bytes, bytes]:
        """Ask for server-sent events, resuming after the last event seen (or the caller's `after`)."""
        return encode_headers({"Accept": MEDIA_TYPE, **({"Last-Event-ID": self.after} if self.after else {})})

    def saw(self, event: StreamedEvent) -> None:
        self.after, self.seen, self.failures = event.cursor, self.seen + 1, 0

    def over(self) -> bool:
        """The end the caller asked for: `max_events` events seen, or `timeout` seconds gone."""
        if self.max_events is not None and self.seen >= self.max_events:
            return True
        return self.deadline is not None and self.clock() >= self.deadline

    def resume_after(self, retry: RetryPolicy, dropped: httpx.TransportError | None) -> float:
        """The seconds to wait before resuming a stream that ended before `over` (`dropped`: the connection
        dropped; None: the server ended it); ConnectionFailed once the retries are spent."""
        why = repr(dropped) if dropped is not None else "the server ended it before max_events or timeout"
        if self.failures >= retry.max_retries:
            raise ConnectionFailed(f"event stream: {why}") from dropped
        wait = retry.delay(self.failures)
        self.failures += 1
        return wait
