"""The Embedder protocol. Implementations live one per module and are chosen by name through
`engine.embed.registry` (`minilm`, `openai`, `hash`)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor, Future
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt


@runtime_checkable
class Embedder(Protocol):
    #: identifies the vector space; part of the cache key (e.g. "minilm:all-MiniLM-L6-v2")
    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One L2-normalized float32 row per text. Raises engine.errors.Unavailable on failure."""
        ...


Rows = npt.NDArray[np.float32]


class Finished(Future[Any]):
    """A pass run here and now (`finished`): nothing of it runs beside the caller."""


def finished(compute: Any, *args: Any) -> Future[Any]:
    """`compute(*args)` run now, as a finished Future (what it raised is in the Future)."""
    done: Future[Any] = Finished()
    try:
        done.set_result(compute(*args))
    except Exception as exc:  # re-raised by .result(), as from a pass begun elsewhere
        done.set_exception(exc)
    return done


def begin(embedder: Embedder, texts: Sequence[str], pool: Executor | None = None) -> Future[Rows]:
    """`embedder.embed(texts)` begun: an embedder with a `begin` of its own runs its pass beside the
    caller, who keeps the GIL for other work until `.result()`; any other embeds in `pool`, or here and
    now without one."""
    own = getattr(embedder, "begin", None)
    if own is None:
        return pool.submit(embedder.embed, texts) if pool is not None else finished(embedder.embed, texts)
    try:
        started: Future[Rows] = own(texts)
    except Exception as exc:
        return finished(_raise, exc)
    return started


def _raise(exc: Exception) -> Any:
    raise exc
