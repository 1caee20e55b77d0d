"""Loci's Python client: `LociClient` (sync) and `AsyncLociClient` (asyncio), on httpx.

- Requests and answers are the server's own wire Structs (`loci.wire`, re-exported here), so the client
  and the server cannot disagree on a shape.
- Every logical write (create, update, delete, assemble, prune) carries one `Idempotency-Key` for all its
  attempts, so a retry never writes twice; pass `idempotency_key=` to choose it.
- Connection errors, 429 (after `Retry-After`) and 503 are retried with exponential backoff
  (`RetryPolicy`); other errors raise the `APIError` of their status, carrying the error envelope; a
  success whose body is not the call's answer type raises `UnexpectedAnswer`.
- Header values (agent, `Idempotency-Key`, `after`, API key) are sent as UTF-8; one with a control
  character raises `InvalidRequest` before any request.
- `iter_memories` / `iter_events` walk cursor pages; `stream_events` follows the live event stream
  (server-sent events), resuming after the last event when the connection drops or the server ends the
  stream before its `max_events` or `timeout` (a server told to stop does; a revoked key then raises
  its 401).

It needs nothing but httpx and msgspec: the `loci-client` distribution (clients/python) ships it with
`loci.wire` and without the server (tests/integrations/test_client_wheel.py).
"""

from loci.client.async_ import AsyncLociClient
from loci.client.calls import Call
from loci.client.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    ConnectionFailed,
    InternalServerError,
    InvalidRequest,
    LociClientError,
    NotFoundError,
    NotSupportedError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    UnexpectedAnswer,
    ValidationError,
)
from loci.client.retry import RetryPolicy
from loci.client.sse import StreamedEvent
from loci.client.sync import LociClient
from loci.wire.errors import ErrorBody
from loci.wire.health import Health
from loci.wire.memories import Deleted, MemoryList
from loci.wire.models import Memory
from loci.wire.ops import EventItem, EventList, SummarizeRequest, SummarizeResponse
from loci.wire.options import AssembleRequest, Budget, IngestOptions, RecallRequest
from loci.wire.prune import PruneRequest, PruneResult
from loci.wire.responses import AssembleResponse, RecallResponse
from loci.wire.writes import MemoryCreate, MemoryPatch

__all__ = [
    "APIError",
    "AssembleRequest",
    "AssembleResponse",
    "AsyncLociClient",
    "AuthenticationError",
    "BadRequestError",
    "Budget",
    "Call",
    "ConflictError",
    "ConnectionFailed",
    "Deleted",
    "ErrorBody",
    "EventItem",
    "EventList",
    "Health",
    "IngestOptions",
    "InternalServerError",
    "InvalidRequest",
    "LociClient",
    "LociClientError",
    "Memory",
    "MemoryCreate",
    "MemoryList",
    "MemoryPatch",
    "NotFoundError",
    "NotSupportedError",
    "PermissionDeniedError",
    "PruneRequest",
    "PruneResult",
    "RateLimitError",
    "RecallRequest",
    "RecallResponse",
    "RetryPolicy",
    "ServiceUnavailableError",
    "StreamedEvent",
    "SummarizeRequest",
    "SummarizeResponse",
    "UnexpectedAnswer",
    "ValidationError",
]
