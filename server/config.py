"""Server settings, read from the environment (LOCI_*)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import msgspec


class Settings(msgspec.Struct, kw_only=True, frozen=True):
    data_dir: str = "./data"
    database_url: str | None = None  # e.g. sqlite:///path.db, postgresql://...; default: <data_dir>/loci.db
    rate_limit: str = "600/minute"
    cors_origins: tuple[str, ...] = ()
    embedder: str = "minilm"
    idempotency_ttl_hours: float = 24.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        origins = tuple(o.strip() for o in env.get("LOCI_CORS_ORIGINS", "").split(",") if o.strip())
        return cls(
            data_dir=env.get("LOCI_DATA_DIR") or "./data",
            database_url=env.get("LOCI_DATABASE_URL") or None,
            rate_limit=env.get("LOCI_RATE_LIMIT") or "600/minute",
            cors_origins=origins,
            embedder=env.get("LOCI_EMBEDDER") or "minilm",
            idempotency_ttl_hours=float(env.get("LOCI_IDEMPOTENCY_TTL_HOURS") or 24),
        )

    @property
    def store_target(self) -> str:
        """What `engine.storage.open_store` opens: the database URL, else the data directory."""
        return self.database_url or str(Path(self.data_dir).expanduser().absolute())
