"""Server settings, read from the environment (LOCI_*)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import msgspec

from engine.embed.registry import check_embedder
from engine.envnum import env_http_url, env_number, env_whole, split_url
from engine.errors import InvalidInput
from engine.extract.llm import TIMEOUT_ENV as LLM_TIMEOUT_ENV
from engine.extract.rules import budget_from_env
from server.ratelimit import parse_rate

#: how long /metrics reuses its count of the memories without a vector (seconds; server.observability)
VECTORS_TTL_ENV = "LOCI_METRICS_VECTORS_SECONDS"
#: defaults of the caps on open event streams (see Settings)
MAX_STREAMS_PER_KEY = 10
MAX_STREAMS = 100


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    """A whole number >= 0 from `name` (empty or unset: `default`); InvalidInput naming it otherwise."""
    return env_whole(env, name, default, note="0: no cap")


#: ten years: a longer time is no use and overflows a timedelta near 1e308 hours
MAX_HOURS = 87600


def _hours(env: Mapping[str, str], name: str, default: float) -> float:
    """A number of hours > 0 from `name` (empty or unset: `default`); InvalidInput naming it otherwise."""
    return env_number(env, name, default, positive=True, maximum=MAX_HOURS, unit="hours")


def _embedder(env: Mapping[str, str]) -> str:
    name = env.get("LOCI_EMBEDDER") or "minilm"
    check_embedder(name, env)
    return name


#: values that name a place or a secret, where a space or line break at an edge is never meant
UNPADDED = ("LOCI_DATA_DIR", "LOCI_DATABASE_URL", "LOCI_METRICS_TOKEN")


def _check_unpadded(env: Mapping[str, str]) -> None:
    """InvalidInput for a value of UNPADDED that begins or ends with whitespace: "sqlite:///x.db\\r" (an
    env file with CRLF lines) opened another database, "x.db\\r", and a padded token matched no scrape."""
    for name in UNPADDED:
        value = env.get(name) or ""
        if value != value.strip():
            raise InvalidInput(
                f"{name} begins or ends with a space or line break ({value[:64]!r}); remove it", field=name
            )


def _check_numbers(env: Mapping[str, str]) -> None:
    """InvalidInput for a number or URL that a part built later reads from `env` (extraction, the LLM,
    metrics)."""
    budget_from_env(env)
    env_http_url(env, "LOCI_LLM_URL")
    env_number(env, LLM_TIMEOUT_ENV, 20.0, positive=True)
    env_number(env, VECTORS_TTL_ENV, 300.0)


def _origins(env: Mapping[str, str]) -> tuple[str, ...]:
    """LOCI_CORS_ORIGINS: `*` or origins as a browser sends them in `Origin`, which is compared as
    written, so "https://app.example/" or "app.example" would never match: InvalidInput naming it."""
    origins = tuple(o.strip() for o in env.get("LOCI_CORS_ORIGINS", "").split(",") if o.strip())
    for origin in origins:
        if origin == "*":
            continue
        parts = split_url(origin)
        if (
            not parts.netloc
            or "@" in parts.netloc
            or origin != f"{parts.scheme}://{parts.netloc}"
            or origin != origin.lower()
        ):
            raise InvalidInput(
                f"LOCI_CORS_ORIGINS: {origin[:64]!r} is not an origin as a browser sends it: "
                "scheme://host[:port] in lower case, no path or trailing slash (e.g. https://app.example.com)",
                field="LOCI_CORS_ORIGINS",
            )
    return origins


def _rate_limit(env: Mapping[str, str]) -> str:
    text = env.get("LOCI_RATE_LIMIT") or "600/minute"
    parse_rate(text)  # InvalidInput naming LOCI_RATE_LIMIT
    return text


class Settings(msgspec.Struct, kw_only=True, frozen=True):
    data_dir: str = "./data"
    database_url: str | None = None  # e.g. sqlite:///path.db, postgresql://...; default: <data_dir>/loci.db
    rate_limit: str = "600/minute"
    cors_origins: tuple[str, ...] = ()
    embedder: str = "minilm"
    idempotency_ttl_hours: float = 24.0
    #: open event streams (`Accept: text/event-stream`) one API key may hold in this process; 0: no cap
    max_streams_per_key: int = MAX_STREAMS_PER_KEY
    #: open event streams this process serves, all keys together; 0: no cap
    max_streams: int = MAX_STREAMS

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        _check_unpadded(env)
        _check_numbers(env)
        origins = _origins(env)
        return cls(
            data_dir=env.get("LOCI_DATA_DIR") or "./data",
            database_url=env.get("LOCI_DATABASE_URL") or None,
            rate_limit=_rate_limit(env),
            cors_origins=origins,
            embedder=_embedder(env),
            idempotency_ttl_hours=_hours(env, "LOCI_IDEMPOTENCY_TTL_HOURS", 24.0),
            max_streams_per_key=_count(env, "LOCI_MAX_STREAMS_PER_KEY", MAX_STREAMS_PER_KEY),
            max_streams=_count(env, "LOCI_MAX_STREAMS", MAX_STREAMS),
        )

    @property
    def store_target(self) -> str:
        """What `engine.storage.open_store` opens: the database URL, else the data directory."""
        return self.database_url or str(Path(self.data_dir).expanduser().absolute())
