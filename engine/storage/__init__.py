"""Store registry: `open_store(target)` turns a configuration string into a Store.

    "memory"                     -> InMemoryStore()
    "postgres-embedded"          -> a fresh database on this process's embedded PostgreSQL (see
                                    engine.storage.postgres.embedded), dropped when the store closes
    "sqlite:///abs/path.db"      -> SQLiteStore("/abs/path.db")
    "sqlite://:memory:"          -> SQLiteStore(":memory:") (one private in-memory database)
    "./data", "/var/lib/loci"    -> SQLiteStore("<dir>/loci.db") (a plain directory path; created if missing)
    "postgresql://..."           -> engine.storage.postgres:PostgresStore(target)

Backends are imported lazily by "module:Class" path, so a backend module may be added later without
touching anything else; an unknown scheme raises engine.errors.UnknownName listing the valid ones.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path

from engine.errors import UnknownName
from engine.storage.base import (
    Capabilities,
    EventQuery,
    Hit,
    ListQuery,
    RecordStore,
    Scope,
    SearchBackend,
    Store,
    Vector,
)

__all__ = [
    "Capabilities",
    "EventQuery",
    "Hit",
    "ListQuery",
    "RecordStore",
    "Scope",
    "SearchBackend",
    "Store",
    "Vector",
    "open_store",
    "BACKENDS",
    "SCHEMES",
]

# Named targets (no "://"): name -> "module:Class", constructed with no arguments.
BACKENDS: dict[str, str] = {
    "memory": "engine.storage.in_memory:InMemoryStore",
    # a fresh database on an embedded PostgreSQL server of this process (eval replays, benchmarks)
    "postgres-embedded": "engine.storage.postgres.embedded:EmbeddedPostgresStore",
}

# URL schemes: scheme -> "module:Class", constructed with the argument `_SCHEME_ARG` derives.
SCHEMES: dict[str, str] = {
    "sqlite": "engine.storage.sqlite:SQLiteStore",
    # PostgreSQL (added by its own helper module, imported only when asked for):
    "postgresql": "engine.storage.postgres:PostgresStore",
    "postgres": "engine.storage.postgres:PostgresStore",
}


def _load(path: str) -> Callable[..., Store]:
    module_name, _, attr = path.partition(":")
    factory: Callable[..., Store] = getattr(importlib.import_module(module_name), attr)
    return factory


def _looks_like_path(target: str) -> bool:
    return os.sep in target or "/" in target or target.startswith((".", "~")) or Path(target).is_dir()


def open_store(target: str) -> Store:
    """Open the store named by `target` (see the module docstring)."""
    if "://" in target:
        scheme, _, rest = target.partition("://")
        scheme = scheme.lower()
        if scheme not in SCHEMES:
            raise UnknownName("store scheme", scheme, list(SCHEMES) + list(BACKENDS) + ["<directory path>"])
        cls = _load(SCHEMES[scheme])
        if scheme == "sqlite":
            return cls(rest)
        return cls(target)
    if target in BACKENDS:
        return _load(BACKENDS[target])()
    if _looks_like_path(target):
        directory = Path(target).expanduser()
        directory.mkdir(parents=True, exist_ok=True)
        return _load(SCHEMES["sqlite"])(str(directory / "loci.db"))
    raise UnknownName(
        "store", target, list(BACKENDS) + [f"{s}://..." for s in SCHEMES] + ["<directory path>"]
    )
