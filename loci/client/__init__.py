"""Loci's Python client: `LociClient` (sync) and `AsyncLociClient` (asyncio), on httpx.

- Requests and answers are the server's own wire Structs (re-exported here), so the client and the
  server cannot disagree on a shape.
- Every logical write (create, update, delete, assemble, prune) carries one `Idempotency-Key` for all its
  attempts, so a retry never writes twice; pass `idempotency_key=` to choose it.
- Connection errors, 429 (after `Retry-After`) and 503 are retried with exponential backoff
  (`RetryPolicy`); other errors raise the `APIError` of their status, carrying the error envelope.
- `iter_memories` / `iter_events` walk cursor pages; `stream_events` follows the live event stream
  (server-sent events), resuming after the last event when the connection drops.

Importing it loads neither torch, faiss nor the web framework (tests/integrations/test_sdk.py).
"""

from engine.memory_service import MemoryCreate, MemoryPatch
from engine.models import Memory
from engine.prune import PruneRequest, PruneResult
from engine.retrieval.options import AssembleRequest, Budget, IngestOptions, RecallRequest
from engine.retrieval.responses import AssembleResponse, RecallResponse
from loci.client.async_ import AsyncLociClient
from loci.client.calls import Call
from loci.client.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    ConnectionFailed,
    InternalServerError,
    LociClientError,
    NotFoundError,
    NotSupportedError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    ValidationError,
)
from loci.client.retry import RetryPolicy
from loci.client.sse import StreamedEvent
from loci.client.sync import LociClient
from server.schemas.errors import ErrorBody
from server.schemas.health import Health
from server.schemas.memories import Deleted, MemoryList
from server.schemas.ops import EventItem, EventList, SummarizeRequest, SummarizeResponse

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
    "ValidationError",
]
