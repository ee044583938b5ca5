"""Let synchronous callers drive async SDK clients.

Each API backend instance owns one event loop running in a daemon thread. Callers from any
thread (including a thread that is itself running an event loop, e.g. a notebook or an async
runner) submit coroutines with `run_coroutine_threadsafe` and block on the result; all requests
of all callers share the loop, so one semaphore bounds the backend's concurrency globally.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def _shutdown(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    if loop.is_closed():
        return
    if thread.is_alive():
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
    if not thread.is_alive() and not loop.is_running():
        loop.close()


WAIT_SLICE_S = 0.25  # how often a caller waiting on the loop checks that it still runs


class LoopThread:
    """A private event loop in a daemon thread, started lazily on first use."""

    def __init__(self, name: str = "sparring-aio"):
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self.name}: event loop already closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def main() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=main, name=self.name, daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
                # Stop the thread if the owner is garbage-collected without close().
                weakref.finalize(self, _shutdown, loop, thread)
            return self._loop

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the loop; returns a thread-safe future."""
        try:
            loop = self._ensure()
        except RuntimeError:
            coro.close()
            raise
        return asyncio.run_coroutine_threadsafe(coro, loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` to completion on the loop and return its result (blocking the caller)."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError(f"{self.name}: blocking call from inside its own event loop would deadlock")
        future = self.submit(coro)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                wait = WAIT_SLICE_S if deadline is None else max(0.0, min(WAIT_SLICE_S, deadline - time.monotonic()))
                try:
                    return future.result(wait)
                except concurrent.futures.TimeoutError:
                    if self._closed:  # closed under us (a second Ctrl-C): never wait forever
                        raise RuntimeError(f"{self.name}: the event loop was closed while a request was "
                                           "in flight") from None
                    if deadline is not None and time.monotonic() >= deadline:
                        raise
        except BaseException:
            # KeyboardInterrupt / timeout in the caller: do not leave the work running.
            future.cancel()
            raise

    def close(self) -> None:
        """Stop the loop and join the thread. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is not None and thread is not None:
            if threading.current_thread() is thread:
                loop.call_soon(loop.stop)
                return
            _shutdown(loop, thread)

