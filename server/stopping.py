"""Whether the server is stopping, known as soon as it is told to stop: `Stopping`, one per app.

uvicorn (`loci serve`, its `--workers`, `uvicorn --factory server.asgi:create`, gunicorn's uvicorn
worker) stops on SIGTERM or SIGINT by closing its sockets and waiting for every open connection to
close; only then does it run the app's shutdown, and it tells the app nothing before. An event stream
never closes by itself, so without a word to the app the server would wait for the stream's client,
and a process manager's SIGKILL would come before the shutdown hooks (the held read events' write, the
store's close).

The app's lifespan (`Stopping.lifespan`) therefore puts a handler in front of the process's SIGTERM and
SIGINT handlers when the app starts: it marks the app stopping, then calls the handler it stands in
front of, so the server's own handling is unchanged. `event_stream.stream` checks the mark at every
poll, and its wait between polls wakes at once when the mark is set; its connection closes, and the
server's graceful stop goes on to the app's shutdown. Signals reach the main thread only: an app started
elsewhere (`TestClient` runs it on a thread of its own) chains nothing. A handler that is not a Python
callable (SIG_DFL, SIG_IGN, one set outside Python) is left alone. The app's shutdown marks it stopping
too and puts back the handlers it stood in front of.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import AsyncIterator, Callable
from types import FrameType
from typing import Any

Handler = Callable[[int, FrameType | None], Any]
SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stopping:
    """Set once the server is told to stop (see the module docstring); cleared when the app starts."""

    def __init__(self) -> None:
        self._flag = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._woken: asyncio.Event | None = None  # on `_loop`: wakes `sleep`
        self._replaced: dict[int, Handler] = {}

    def is_set(self) -> bool:
        return self._flag.is_set()

    def set(self) -> None:
        """Mark the app stopping and wake whoever sleeps in `sleep`; safe in a signal handler or any
        thread."""
        self._flag.set()
        loop, woken = self._loop, self._woken
        if loop is not None and woken is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing sleeps on it
                loop.call_soon_threadsafe(woken.set)

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds`, or less: until the app is marked stopping."""
        woken = self._woken
        if woken is None or self._loop is not asyncio.get_running_loop():
            await asyncio.sleep(0 if self.is_set() else seconds)
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await woken.wait()

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: object = None) -> AsyncIterator[None]:
        """The app's lifespan: watch SIGTERM and SIGINT while it serves (see the module docstring)."""
        self._flag.clear()
        self._loop = asyncio.get_running_loop()
        self._woken = asyncio.Event()
        self._chain()
        try:
            yield
        finally:
            self.set()
            self._unchain()

    # --- the signal handlers -----------------------------------------------------------------------------
    def _chain(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal.signal works on the main thread only, and signals are delivered there
        for sig in SIGNALS:
            current = signal.getsignal(sig)
            if callable(current):
                self._replaced[sig] = current
                signal.signal(sig, self._on_signal)

    def _unchain(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, previous in list(self._replaced.items()):
            if signal.getsignal(sig) == self._on_signal:  # not if another handler was put in front of ours
                signal.signal(sig, previous)
                del self._replaced[sig]

    def _on_signal(self, sig: int, frame: FrameType | None) -> None:
        self.set()
        previous = self._replaced.get(sig)
        if previous is not None:
            previous(sig, frame)
