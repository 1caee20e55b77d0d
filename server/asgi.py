"""The app for an ASGI server that imports it by name (several workers, or any ASGI host).

    uvicorn --factory server.asgi:create --workers 4        (settings from LOCI_* variables)
    gunicorn -k uvicorn.workers.UvicornWorker -w 4 'server.asgi:create()'

Each worker process calls `create()`, which reads `Settings.from_env()`, opens its own store (its own
connection pool) and uses `limiter_for(settings)`: limits shared through PostgreSQL. `server.asgi:app`
also works: the module builds the app on first access to `app`, never at import.

Several workers need PostgreSQL. With SQLite, `create()` refuses when LOCI_WORKERS or
WEB_CONCURRENCY (uvicorn's default for --workers) asks for more than one: each SQLite process keeps
its own in-process retrieval index (faiss + BM25 per namespace), and a write by one process makes
every other process drop and rebuild its index on its next search (PRAGMA data_version), so N
workers rebuild on nearly every request; SQLite also takes one writer at a time, and in-process rate
limits would allow N times the configured rate.

`loci serve --workers N` uses `check_workers`, `settings_env` and `run_workers` from here.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from litestar import Litestar

from engine.envnum import env_whole
from engine.errors import InvalidInput
from server.config import Settings
from server.observability import MULTIPROC_ENV
from server.ratelimit_shared import close_limiter, is_postgres_url, limiter_for

log = logging.getLogger("loci.server")

FACTORY = "server.asgi:create"


def requested_workers(env: Mapping[str, str]) -> int:
    for name in ("LOCI_WORKERS", "WEB_CONCURRENCY"):
        if env.get(name):  # at least 1 here: check_workers would name --workers, which was not given
            return env_whole(env, name, 1, low=1)
    return 1


def check_workers(settings: Settings, workers: int) -> None:
    """Refuse more than one worker unless the store is PostgreSQL (see the module docstring)."""
    if workers < 1:
        raise InvalidInput(f"--workers must be at least 1, not {workers}", field="workers")
    if workers > 1 and not is_postgres_url(settings.database_url):
        raise InvalidInput(
            f"{workers} workers need PostgreSQL (LOCI_DATABASE_URL=postgresql://...). With SQLite run one "
            "worker: each process keeps its own in-process search index, and every write by one process "
            "makes the others rebuild theirs; SQLite also admits one writer at a time.",
            field="workers",
        )


def settings_env(settings: Settings) -> dict[str, str]:
    """LOCI_* variables that make `Settings.from_env()` in a worker equal `settings`."""
    env = {
        "LOCI_DATA_DIR": settings.data_dir,
        "LOCI_RATE_LIMIT": settings.rate_limit,
        "LOCI_CORS_ORIGINS": ",".join(settings.cors_origins),
        "LOCI_EMBEDDER": settings.embedder,
        "LOCI_IDEMPOTENCY_TTL_HOURS": repr(settings.idempotency_ttl_hours),
        "LOCI_MAX_STREAMS_PER_KEY": str(settings.max_streams_per_key),
        "LOCI_MAX_STREAMS": str(settings.max_streams),
    }
    if settings.database_url:
        env["LOCI_DATABASE_URL"] = settings.database_url
    return env


def warm_embedder(app: Litestar) -> None:
    """Load the embedder's weights in the background, so a worker's first write does not wait."""
    cache = app.state.loci.memories.embeddings
    if cache is None:
        return
    embedder = cache.embedder

    def warm() -> None:
        try:
            embedder.embed(["warm up"])
        except Exception as exc:  # writes still work without vectors; the service logs it
            log.warning("embedder unavailable: %s", exc)

    threading.Thread(target=warm, name="loci-embedder-warmup", daemon=True).start()


def stop_with_parent() -> None:
    """In a worker that multiprocessing started (`loci serve --workers N`, `uvicorn --workers N`), stop
    (SIGTERM: the graceful stop) once the process that started it is gone. uvicorn's supervisor killed
    outright (SIGKILL, the OOM killer) leaves its workers serving the port unsupervised, so a restart
    could not bind it and a later SIGTERM to the supervisor's pid reached nobody."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()  # wakes when the parent's end of the pipe closes, however the parent ended
        log.warning("the process that started this worker (pid %s) is gone; stopping", parent.pid)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="loci-parent-watch", daemon=True).start()


def create(env: Mapping[str, str] | None = None) -> Litestar:
    """The app factory: settings from the environment, the shared limiter, its own store."""
    from server.app import create_app

    env = os.environ if env is None else env
    settings = Settings.from_env(env)
    check_workers(settings, requested_workers(env))
    limiter = limiter_for(settings, env)
    app = create_app(settings, limiter=limiter)
    app.on_shutdown.append(lambda: close_limiter(limiter))
    if env.get("LOCI_WARM_EMBEDDER", "1") != "0":
        warm_embedder(app)
    stop_with_parent()
    return app


COUNTS_PREFIX = "loci-metrics-"


def counts_dir() -> str:
    """A new directory for the workers' metric files, named after this supervisor's pid, once the ones
    of supervisors no longer running are removed (a SIGKILL skips the cleanup after `uvicorn.run`)."""
    for path in Path(tempfile.gettempdir()).glob(f"{COUNTS_PREFIX}*-*"):
        pid = path.name.removeprefix(COUNTS_PREFIX).split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _running(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{COUNTS_PREFIX}{os.getpid()}-")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def run_workers(settings: Settings, *, host: str, port: int, workers: int, **uvicorn_options: Any) -> None:
    """Run `workers` uvicorn worker processes, each building the app with `create()`."""
    import uvicorn

    check_workers(settings, workers)
    os.environ.update(settings_env(settings))
    os.environ["LOCI_WORKERS"] = str(workers)
    counts = None
    if workers > 1 and not os.environ.get(MULTIPROC_ENV):  # the workers' metrics, summed at each scrape
        counts = counts_dir()
        os.environ[MULTIPROC_ENV] = counts
    try:
        uvicorn.run(FACTORY, factory=True, host=host, port=port, workers=workers, **uvicorn_options)
    finally:
        if counts is not None:
            shutil.rmtree(counts, ignore_errors=True)
            os.environ.pop(MULTIPROC_ENV, None)


_app: Litestar | None = None
_lock = threading.Lock()


def __getattr__(name: str) -> Any:
    """`server.asgi:app`: built on first access (one per process), never at import."""
    global _app
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _lock:
        if _app is None:
            _app = create()
        return _app
