"""A parser of the server-sent-event stream of GET /v0/observability/events (`id:` the event's cursor,
`event:` its type, `data:` the event item as JSON; comments and `retry:` are skipped)."""

from __future__ import annotations

import msgspec

from loci.client.errors import UnexpectedAnswer
from loci.wire.ops import EventItem

MEDIA_TYPE = "text/event-stream"


class StreamedEvent(msgspec.Struct, frozen=True, kw_only=True):
    #: where to resume after this event (send it as `after` / Last-Event-ID)
    cursor: str
    type: str
    item: EventItem


class Parser:
    """Feed it lines (without their newline); it answers an event at each blank line that ends one.
    `status`: the stream's answer status, for the UnexpectedAnswer of data that is not an event item."""

    def __init__(self, status: int = 200) -> None:
        self._status = status
        self._id: str | None = None
        self._type = "message"
        self._data: list[str] = []

    def feed(self, line: str) -> StreamedEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "id":
            self._id = value
        elif name == "event":
            self._type = value
        elif name == "data":
            self._data.append(value)
        return None

    def _dispatch(self) -> StreamedEvent | None:
        data, cursor, kind = "\n".join(self._data), self._id, self._type
        self._data, self._type = [], "message"
        if not data or cursor is None:
            return None
        try:
            item = msgspec.json.decode(data, type=EventItem)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise UnexpectedAnswer(
                f"event {cursor}: its data is not an EventItem: {exc}", status=self._status, request_id=None
            ) from exc
        return StreamedEvent(cursor=cursor, type=kind, item=item)
