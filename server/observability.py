"""Metrics (Prometheus) and structured access logs.

Wiring (in `server.app.create_app`): add `*observability.ROUTES` to the route handlers and, after the
Gateway is installed, call `observability.install(app, store)`. It wraps the whole ASGI handler
(outside the Gateway, so rate-limited, preflight and unmatched requests are counted too) and keeps the
`Observability` instance in `app.state.observability`.

Metrics, on a registry of their own per app (never the process-global one):
- `loci_http_requests_total{route,method,status}` and `loci_http_request_duration_seconds{route,method}`
  (histogram). `route` is the route TEMPLATE (`/v0/memories/{memory_id}`), never the raw path;
  `unmatched` for a path no route serves. Methods outside the HTTP set are counted as `other`; a request
  whose client left before its body was read is `status="499"` (logged at INFO, not as an error).
- `loci_assemble_stage_seconds{stage}` (histogram): `observe_stages({"embed": 1.2, ...})` in ms.
- `loci_memories_stored` (gauge): `store.count_memories()`, read at scrape time.
- `loci_memories_without_vector{model}` (gauge): memories with no vector for the embedder's model
  (`loci doctor` embeds them), counted at scrape time at most every `LOCI_METRICS_VECTORS_SECONDS` (300).
- `loci_embed_cache_hits_total`, `loci_embed_cache_misses_total`: `count_embed_cache(hits, misses)`.
`observe_stages` and `count_embed_cache` find the app's instance through a context variable the
middleware sets for the request (`server.threads.run_sync` carries it into the worker thread); outside a request
they do nothing.

Several worker processes (`loci serve --workers N` on PostgreSQL) count into one set of series:
prometheus_client's multiprocess mode, where each process writes its counters and histograms to files
in `PROMETHEUS_MULTIPROC_DIR` and a scrape, whichever worker answers it, sums every process's files
(else each scrape would show the one worker that answered, and a counter would seem to go back).
`loci serve` makes that directory for its workers; a deployment that runs uvicorn or gunicorn with
several workers itself sets the variable to an empty directory.

GET /metrics answers the Prometheus text format. It needs no API key (scrapers run inside the
deployment); set LOCI_METRICS_TOKEN to require `Authorization: Bearer <that token>`.

Access log: one JSON line per request on logger `loci.access` (INFO): request_id, method, route
(template), status, duration_ms and org_id (when the key was valid). Never headers, query strings,
bodies or paths: no Authorization value, API key, cursor or memory text can leak through it.
`loci serve` turns uvicorn's own request lines off (this line says what they would). Where a
deployment runs uvicorn itself (`uvicorn --factory`, gunicorn's uvicorn worker), its `uvicorn.access`
request lines, and under any of them its `uvicorn.error` lines about websocket handshakes, hold the
request target: `install` adds `QueryRedactor` to those loggers, which replaces every query string
in them with `?<redacted>` (a key sent as `?api_key=...` would otherwise be written in clear).
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any, TypeGuard

import msgspec
from litestar import Litestar, Request, Response, get
from litestar.utils.path import normalize_path
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from engine.embed.backfill import count_missing
from engine.envnum import env_number
from engine.errors import Unauthorized
from engine.storage.base import Store
from server.auth import Principal
from server.config import VECTORS_TTL_ENV
from server.http import error_responses

log = logging.getLogger("loci.server")
access_log = logging.getLogger("loci.access")

ASGIApp = Callable[..., Any]
UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
TOKEN_ENV = "LOCI_METRICS_TOKEN"
#: where each worker process writes its counts (prometheus_client's multiprocess mode), when set
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class AccessRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    request_id: str | None
    method: str
    route: str
    status: int
    duration_ms: float
    org_id: str | None = None


class MemoriesStored(Collector):
    """`loci_memories_stored`, counted by the store when scraped."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def describe(self) -> list[Metric]:
        return [GaugeMetricFamily("loci_memories_stored", "Memories stored (all orgs)")]

    def collect(self) -> Iterator[Metric]:
        try:
            count = self.store.count_memories()
        except Exception as exc:  # a scrape must not fail because the store is busy or closed
            log.warning("loci_memories_stored: count failed (%s)", type(exc).__name__)
            return
        yield GaugeMetricFamily("loci_memories_stored", "Memories stored (all orgs)", value=count)


class MissingVectors(Collector):
    """`loci_memories_without_vector{model}`: memories whose text has no vector for the configured
    embedder (`loci doctor` embeds them). Counting reads every memory, so a count is reused for
    `ttl` seconds."""

    def __init__(self, store: Store, model_of: Callable[[], str], ttl: float = 300.0) -> None:
        self.store = store
        self.model_of = model_of
        self.ttl = ttl
        self._last: tuple[float, str, int] | None = None

    def describe(self) -> list[Metric]:
        return [
            GaugeMetricFamily("loci_memories_without_vector", "Memories without a vector", labels=["model"])
        ]

    def collect(self) -> Iterator[Metric]:
        try:
            model = self.model_of()
            last = self._last
            if last is None or last[1] != model or time.monotonic() - last[0] > self.ttl:
                last = self._last = (time.monotonic(), model, count_missing(self.store, model))
        except Exception as exc:  # a scrape must not fail because the store or the embedder is down
            log.warning("loci_memories_without_vector: count failed (%s)", type(exc).__name__)
            return
        family = GaugeMetricFamily(
            "loci_memories_without_vector", "Memories without a vector", labels=["model"]
        )
        family.add_metric([last[1]], last[2])
        yield family


class Observability:
    """The metrics of one app and the access log."""

    def __init__(
        self,
        store: Store | None = None,
        *,
        metrics_token: str | None = None,
        vector_model: Callable[[], str] | None = None,
    ) -> None:
        self.registry = CollectorRegistry()
        self.metrics_token = metrics_token or None
        self.requests = Counter(
            "loci_http_requests",
            "HTTP requests by route template, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "loci_http_request_duration_seconds",
            "HTTP request latency",
            ["route", "method"],
            registry=self.registry,
        )
        self.stages = Histogram(
            "loci_assemble_stage_seconds",
            "Context assembly latency per stage",
            ["stage"],
            buckets=STAGE_BUCKETS,
            registry=self.registry,
        )
        self.embed_hits = Counter(
            "loci_embed_cache_hits", "Texts whose embedding came from the cache", registry=self.registry
        )
        self.embed_misses = Counter(
            "loci_embed_cache_misses", "Texts sent to the embedder", registry=self.registry
        )
        #: read from the database at scrape time: the same whichever process answers
        self.stored: list[Collector] = []
        if store is not None:
            self.stored.append(MemoriesStored(store))
        if store is not None and vector_model is not None:
            ttl = env_number(os.environ, VECTORS_TTL_ENV, 300.0)
            self.stored.append(MissingVectors(store, vector_model, ttl))
        for collector in self.stored:
            self.registry.register(collector)

    # --- recording -------------------------------------------------------------------------------------
    def observe_request(self, *, route: str, method: str, status: int, seconds: float) -> None:
        method = method if method in METHODS else "other"
        self.requests.labels(route=route, method=method, status=str(status)).inc()
        self.latency.labels(route=route, method=method).observe(seconds)

    def observe_stages(self, timings_ms: Mapping[str, Any] | msgspec.Struct) -> None:
        """Stage latencies in MILLISECONDS (e.g. assemble's StageTimings); non-numbers are skipped."""
        items = msgspec.structs.asdict(timings_ms) if isinstance(timings_ms, msgspec.Struct) else timings_ms
        for stage, ms in items.items():
            if isinstance(ms, int | float) and not isinstance(ms, bool) and ms >= 0:
                self.stages.labels(stage=str(stage)).observe(float(ms) / 1000.0)

    def count_embed_cache(self, hits: int = 0, misses: int = 0) -> None:
        if hits > 0:
            self.embed_hits.inc(hits)
        if misses > 0:
            self.embed_misses.inc(misses)

    # --- exposing ------------------------------------------------------------------------------------
    def render(self) -> bytes:
        shared = os.environ.get(MULTIPROC_ENV)
        if not shared:
            return generate_latest(self.registry)
        every_process = CollectorRegistry()
        MultiProcessCollector(every_process, path=shared)  # type: ignore[no-untyped-call]
        for collector in self.stored:
            every_process.register(collector)
        return generate_latest(every_process)

    def allows(self, authorization: str | None) -> bool:
        if self.metrics_token is None:
            return True
        scheme, _, token = (authorization or "").strip().partition(" ")
        # bytes: compare_digest raises on str with non-ASCII letters; headers arrive decoded as latin-1
        sent = token.strip().encode("latin-1", errors="replace")
        return scheme.lower() == "bearer" and secrets.compare_digest(sent, self.metrics_token.encode())


# --- the current request's instance -------------------------------------------------------------------
_CURRENT: ContextVar[Observability | None] = ContextVar("loci_observability", default=None)


def current() -> Observability | None:
    return _CURRENT.get()


def observe_stages(timings_ms: Mapping[str, Any] | msgspec.Struct) -> None:
    """Record assemble stage latencies (ms) on the current app's metrics; a no-op outside a request."""
    obs = _CURRENT.get()
    if obs is not None:
        obs.observe_stages(timings_ms)


def count_embed_cache(hits: int = 0, misses: int = 0) -> None:
    obs = _CURRENT.get()
    if obs is not None:
        obs.count_embed_cache(hits, misses)


# --- the ASGI server's log lines --------------------------------------------------------------------
#: loggers whose lines carry a request target (path and query) as one of their arguments
SERVER_LOGGERS = ("uvicorn.access", "uvicorn.error")
REDACTED_QUERY = "?<redacted>"


def redact_target(target: str) -> str:
    """A request target without its query string (`/p?api_key=x` -> `/p?<redacted>`)."""
    path, sep, _ = target.partition("?")
    return path + REDACTED_QUERY if sep else path


class QueryRedactor(logging.Filter):
    """Replaces the query string of every request target (an argument that starts with `/`) in a log
    record; the line is kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(_is_target(a) for a in args):
            record.args = tuple(redact_target(a) if _is_target(a) else a for a in args)
        elif isinstance(record.msg, str) and record.msg.startswith("/") and "?" in record.msg:
            record.msg = redact_target(record.msg)
        return True


def _is_target(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and value.startswith("/") and "?" in value


def redact_server_logs() -> None:
    """Add `QueryRedactor` to the ASGI server's loggers (once; the server's logging set-up keeps it)."""
    for name in SERVER_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, QueryRedactor) for f in logger.filters):
            logger.addFilter(QueryRedactor())


# --- the middleware ---------------------------------------------------------------------------------
def route_template(scope: dict[str, Any], status: int) -> str:
    """The template of the route that served (or would serve) the request, else `unmatched`."""
    template = scope.get("path_template")
    if isinstance(template, str) and template:
        return template
    if status == 404:
        return UNMATCHED
    app = scope.get("app")  # answered before routing (429, preflight): ask the router
    router = getattr(app, "asgi_router", None)
    if router is None:
        return UNMATCHED
    try:
        found = router.handle_routing(path=normalize_path(scope.get("path", "/")), method=scope.get("method"))
    except Exception:
        return UNMATCHED
    return found[-1] if isinstance(found[-1], str) and found[-1] else UNMATCHED


def _org_of(scope: dict[str, Any]) -> str | None:
    state = scope.get("state")
    principal = state.get("principal") if isinstance(state, dict) else None
    return principal.org_id if isinstance(principal, Principal) else None


class AccessMiddleware:
    """ASGI: times every HTTP request, counts it and writes one access-log line."""

    def __init__(self, app: ASGIApp, obs: Observability, *, access_log: bool = True) -> None:
        self.app = app
        self.obs = obs
        self.access_log = access_log

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client sees if nothing was sent

        async def send_status(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        token = _CURRENT.set(self.obs)
        try:
            await self.app(scope, receive, send_status)
        finally:
            _CURRENT.reset(token)
            self.finish(scope, status, time.perf_counter() - started)

    def finish(self, scope: dict[str, Any], status: int, seconds: float) -> None:
        method = str(scope.get("method", "GET"))
        route = route_template(scope, status)
        try:
            self.obs.observe_request(route=route, method=method, status=status, seconds=seconds)
            if self.access_log and access_log.isEnabledFor(logging.INFO):
                state = scope.get("state")
                rid = state.get("request_id") if isinstance(state, dict) else None
                record = AccessRecord(
                    request_id=rid if isinstance(rid, str) else None,
                    method=method if method in METHODS else "other",
                    route=route,
                    status=status,
                    duration_ms=round(seconds * 1000.0, 3),
                    org_id=_org_of(scope),
                )
                access_log.info(
                    msgspec.json.encode(record).decode(), extra={"access": msgspec.structs.asdict(record)}
                )
        except Exception:  # observability never breaks a request
            log.exception("access metrics/log failed")


def install(
    app: Litestar,
    store: Store | None = None,
    *,
    metrics_token: str | None = None,
    vector_model: Callable[[], str] | None = None,
    access_log: bool = True,
) -> Observability:
    """Create the app's metrics, wrap its ASGI handler (outermost) and keep the instance in app.state.
    `vector_model` gives the embedder's model name when scraped (the memories without a vector);
    `access_log` False: requests are counted but not logged."""
    token = metrics_token if metrics_token is not None else os.environ.get(TOKEN_ENV)
    obs = Observability(store, metrics_token=token, vector_model=vector_model)
    redact_server_logs()
    app.state.observability = obs
    app.asgi_handler = AccessMiddleware(app.asgi_handler, obs, access_log=access_log)  # type: ignore[assignment]
    return obs


def observability_of(request: Request[Any, Any, Any]) -> Observability:
    found = getattr(request.app.state, "observability", None)
    if not isinstance(found, Observability):
        raise RuntimeError("observability.install(app) was not called")
    return found


@get(
    "/metrics",
    operation_id="getMetrics",
    summary="Prometheus metrics (text format)",
    tags=["operations"],
    security=[],
    sync_to_thread=True,
    media_type="text/plain",
    responses=error_responses(401, 429, 500),
    description="No API key needed; with LOCI_METRICS_TOKEN set, send Authorization: Bearer <token>.",
)
def metrics(request: Request[Any, Any, Any]) -> Response[bytes]:
    obs = observability_of(request)
    if not obs.allows(request.headers.get("authorization")):
        raise Unauthorized("metrics need Authorization: Bearer <LOCI_METRICS_TOKEN>")
    return Response(content=obs.render(), headers={"content-type": CONTENT_TYPE_LATEST})


ROUTES = [metrics]
