"""The one way the app hands blocking work (the store, the engine) to a worker thread.

`run_sync(fn, *args)` runs `fn` on the app's thread pool through the event loop's `run_in_executor`,
in a copy of the caller's context (the request's metrics instance travels with it). anyio's
`to_thread.run_sync` does the same through a capacity limiter, a cancel scope and run-variable look-ups
that cost more of the event loop's time than the hand-off itself; a request makes two of these hops
(the key's look-up and the route's work). `MAX_THREADS` bounds the pool as anyio's default limiter
does. A request cancelled while its work runs leaves the work to finish (a write is never cut short).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from typing import TypeVar

from engine.pools import LazyPool

T = TypeVar("T")
MAX_THREADS = 40

_POOL = LazyPool(MAX_THREADS, "loci-request")


async def run_sync(fn: Callable[..., T], /, *args: object) -> T:
    """`fn(*args)` in a worker thread, awaited."""
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    return await asyncio.get_running_loop().run_in_executor(_POOL.get(), call)
