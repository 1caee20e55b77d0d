"""The Litestar application: `create_app(settings, store=..., embedder=...)`.

Request path: Gateway (request id, key resolution, rate limit, headers, CORS) -> Litestar router ->
guard (scope) -> route -> engine service (in a worker thread; the store is synchronous).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from datetime import timedelta
from typing import cast

import numpy as np
import numpy.typing as npt
from litestar import Litestar
from litestar.routes import HTTPRoute
from litestar.types import Empty

from engine.deferred_events import DeferredEvents
from engine.embed.base import Embedder, begin
from engine.embed.cache import EmbeddingCache
from engine.errors import Unavailable
from engine.memory_service import MemoryService
from engine.storage.base import Store
from loci.wire.writes import MAX_BODY_BYTES
from server import observability, openapi
from server.config import Settings
from server.errors import exception_handler
from server.event_stream import StreamSlots
from server.gateway import Gateway, template_of
from server.http import refuse_unknown_query
from server.idempotency import Idempotency
from server.ratelimit import RateLimiter
from server.ratelimit_shared import close_limiter, limiter_for
from server.routes import ROUTES
from server.routes import mcp as mcp_route
from server.services import Services

log = logging.getLogger("loci.server")


class LazyEmbedder:
    """Creates the configured embedder on first use (model weights load once, not at import)."""

    def __init__(self, name: str, data_dir: str | None = None) -> None:
        self.name = name
        self.data_dir = data_dir  # where the embedder caches files (minilm's exported graph)
        self._embedder: Embedder | None = None
        self._lock = threading.Lock()

    def _get(self) -> Embedder:
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    from engine.embed.registry import create_embedder

                    try:
                        self._embedder = create_embedder(self.name, data_dir=self.data_dir)
                    except Unavailable:
                        raise
                    except Exception as exc:
                        raise Unavailable(f"embedder {self.name!r} could not load: {exc}") from exc
        return self._embedder

    @property
    def model(self) -> str:
        return self._get().model

    @property
    def dim(self) -> int:
        return self._get().dim

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._get().embed(texts)

    def begin(self, texts: Sequence[str]) -> Future[npt.NDArray[np.float32]]:
        return begin(self._get(), texts)


def open_default_store(settings: Settings) -> Store:
    from engine.storage import open_store

    store: Store = open_store(settings.store_target)
    return store


def keep_inline_vectors(store: Store, embedder: Embedder) -> None:
    """Have a search backend that can keep copies of one model's vectors in its rows
    (`Capabilities.vector_copies`: PostgreSQL) keep this server's embedder's, unless it keeps a model
    already. An embedder that cannot load leaves it unset (everything still works, more slowly)."""
    if not store.search.capabilities.vector_copies:
        return
    try:
        store.search.keep_vector_copies(embedder.model)
    except Unavailable as exc:
        log.warning("no inline vectors: the embedder did not load (%s)", exc.message)


def _allowed(route: HTTPRoute) -> str:
    """The `Allow` of a path: its documented methods, where a hidden handler beside them only answers
    what the path does not do (mem0's profile routes under an entity's path: 501)."""
    shown = {m for h in route.route_handlers if h.include_in_schema is not False for m in h.http_methods}
    return ", ".join(sorted(shown | {"OPTIONS"} if shown else route.methods))


def create_app(
    settings: Settings | None = None,
    *,
    store: Store | None = None,
    embedder: Embedder | None = None,
    limiter: RateLimiter | None = None,
    embedded: bool = False,
) -> Litestar:
    """`embedded`: the app runs inside another program (a notebook, the eval harness): it leaves the
    process's logging as it was (Litestar would set the root logger to INFO) and writes no access log."""
    settings = settings or Settings.from_env()
    owns_store = store is None
    store = store if store is not None else open_default_store(settings)
    # LazyEmbedder exposes model/dim as read-only properties; structurally it is an Embedder
    chosen = (
        embedder
        if embedder is not None
        else cast(Embedder, LazyEmbedder(settings.embedder, settings.data_dir))
    )
    owns_limiter = limiter is None
    limiter = limiter if limiter is not None else limiter_for(settings)
    keep_inline_vectors(store, chosen)
    services = Services(
        settings=settings,
        store=store,
        memories=MemoryService(store, embeddings=EmbeddingCache(chosen, store)),
        idempotency=Idempotency(store, ttl=timedelta(hours=settings.idempotency_ttl_hours)),
        limiter=limiter,
        streams=StreamSlots(per_key=settings.max_streams_per_key, total=settings.max_streams),
        read_events=DeferredEvents(store),
    )

    def close_store() -> None:
        if services.read_events is not None:  # before the store closes: every read's event written
            services.read_events.close()
        if owns_store:
            services.store.close()
        if owns_limiter:
            close_limiter(services.limiter)

    app = Litestar(
        route_handlers=[*ROUTES, *observability.ROUTES, *openapi.ROUTES, *mcp_route.ROUTES],
        exception_handlers={Exception: exception_handler},
        before_request=refuse_unknown_query,
        lifespan=[services.stopping.lifespan, mcp_route.lifespan],  # see server.stopping
        openapi_config=openapi.openapi_config(),
        request_max_body_size=MAX_BODY_BYTES,
        on_shutdown=[close_store],
        state=None,
        debug=False,
        logging_config=None if embedded else Empty,
    )
    app.state.loci = services
    allow = {template_of(route.path): _allowed(route) for route in app.routes if isinstance(route, HTTPRoute)}
    mem0_paths = tuple(
        route.path
        for route in app.routes
        if isinstance(route, HTTPRoute)
        and any(openapi.MEM0_TAGS & set(h.tags or ()) for h in route.route_handlers)
    )
    gateway = Gateway(
        app.asgi_handler,
        store=store,
        limiter=limiter,
        cors_origins=settings.cors_origins,
        allow=allow,
        mem0_paths=mem0_paths,
    )
    app.asgi_handler = gateway  # type: ignore[assignment]  # wraps the whole router: see server.gateway
    cache = services.memories.embeddings
    # outermost, so 429s and preflights are counted too
    observability.install(
        app,
        store,
        vector_model=(lambda: cache.model) if cache is not None else None,
        access_log=not embedded,
    )
    if services.memories.embeddings is not None:
        services.memories.embeddings.listener = lambda st: observability.count_embed_cache(
            hits=st.cache_hits, misses=st.texts
        )
    return app
