"""A micro-batcher: many concurrent callers, one forward pass.

Callers ``await batcher.submit(item)``. A background task waits for work, lingers a few
milliseconds so that callers arriving together land in the same batch, then hands a ``Feed`` to a
blocking ``runner`` in a worker thread, so the event loop keeps accepting requests while the
model computes. The runner takes up to ``max_batch_size`` items from the feed, and may take more
between decode steps as rows finish (requests that arrive mid-batch join it instead of waiting
for its longest row). It reports each item as soon as it is done.

With ``group_key`` set, one run holds only items with equal keys (a grammar backend that takes
one schema per batch); the others wait, in order, for a later run.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Generic, Hashable, TypeVar

from localbench.serving.types import EngineError

T = TypeVar("T")

_UNSET = object()


@dataclass
class _Pending(Generic[T]):
    item: T
    future: asyncio.Future
    key: Hashable


class Feed(Generic[T]):
    """The runner's side of the batcher: take queued items, report results (thread-safe)."""

    def __init__(self, batcher: "MicroBatcher[T]", loop: asyncio.AbstractEventLoop):
        self._batcher = batcher
        self._loop = loop
        self._key: Any = _UNSET
        self.taken: list[_Pending[T]] = []  # handle -> pending entry, for this run

    def take(self, n: int) -> list[tuple[int, T]]:
        """Up to ``n`` queued items as (handle, item); [] when nothing is waiting."""
        if n <= 0:
            return []
        got = self._batcher._take(n, self._key, self._loop)
        if not got:
            return []
        if self._key is _UNSET:
            self._key = got[0].key
        self._batcher.batch_sizes.append(len(got))
        self._batcher.batch_keys.append(got[0].key)
        start = len(self.taken)
        self.taken.extend(got)
        return [(start + i, p.item) for i, p in enumerate(got)]

    def report(self, handle: int, result: Any, error: BaseException | None = None) -> None:
        """Deliver one item's result (or exception) to its caller."""
        self._send(self.taken[handle].future, result, error)

    def fail_unreported(self, error: BaseException) -> None:
        for p in self.taken:
            self._send(p.future, None, error)

    def _send(self, fut: asyncio.Future, result: Any, error: BaseException | None) -> None:
        try:
            self._loop.call_soon_threadsafe(_resolve, fut, result, error)
        except RuntimeError:  # the caller's event loop has closed: nobody is waiting any more
            pass


def _resolve(fut: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if fut.done():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(result)


Runner = Callable[[Feed[T]], None]
"""Runs blocking work: takes items from the feed (at least once) and reports every item it took."""


class MicroBatcher(Generic[T]):
    """Gathers concurrent submissions into batches for a blocking runner on one worker thread."""

    def __init__(
        self,
        runner: Runner[T],
        *,
        max_batch_size: int = 32,
        batch_wait_s: float = 0.005,
        group_key: Callable[[T], Hashable] | None = None,
        name: str = "batcher",
        executor: ThreadPoolExecutor | None = None,
    ):
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.runner = runner
        self.max_batch_size = max_batch_size
        self.batch_wait_s = max(0.0, batch_wait_s)
        self.group_key = group_key
        self.name = name
        self.batch_sizes: list[int] = []  # items per take: a new batch, or a group joining a running one
        self.batch_keys: list[Hashable] = []  # the group key of each take (None without grouping)
        self._pending: deque[_Pending[T]] = deque()
        self._lock = threading.Lock()
        # The runner's thread: a shared one when given (the hf engine's torch thread), else its own.
        self._own_executor = executor is None
        self._executor = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task | None = None

    async def submit(self, item: T) -> Any:
        """Queue one item and wait for its result (or the exception the runner reported for it)."""
        loop = asyncio.get_running_loop()
        self._ensure_running(loop)
        fut: asyncio.Future = loop.create_future()
        key = self.group_key(item) if self.group_key is not None else None
        with self._lock:
            self._pending.append(_Pending(item, fut, key))
        assert self._wakeup is not None
        self._wakeup.set()
        return await fut

    def _ensure_running(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the batching task on the caller's loop (again, if an earlier loop has gone)."""
        if self._loop is loop and self._task is not None and not self._task.done():
            return
        if self._loop is not loop:
            with self._lock:
                self._pending.clear()  # futures of a finished loop can never be awaited again
        self._loop = loop
        self._wakeup = asyncio.Event()
        self._task = loop.create_task(self._serve(), name=f"{self.name}-serve")

    def _take(self, n: int, key: Any = _UNSET, loop: asyncio.AbstractEventLoop | None = None) -> list[_Pending[T]]:
        """Up to n live items, in order; with grouping, only those sharing ``key`` (or the first's).

        Only items submitted on ``loop``: a runner still finishing for an event loop that has
        since closed must not take (and lose) requests made on the new one.
        """
        with self._lock:
            batch: list[_Pending[T]] = []
            rest: deque[_Pending[T]] = deque()
            for p in self._pending:
                if p.future.done():
                    continue  # a cancelled caller
                mine = loop is None or p.future.get_loop() is loop
                if mine and self.group_key is not None and key is _UNSET:
                    key = p.key
                if mine and len(batch) < n and (self.group_key is None or p.key == key):
                    batch.append(p)
                else:
                    rest.append(p)
            self._pending = rest
            return batch

    def has_pending(self) -> bool:
        """Whether live items submitted on the current event loop are waiting."""
        with self._lock:
            return any(not p.future.done() and p.future.get_loop() is self._loop for p in self._pending)

    async def _serve(self) -> None:
        assert self._wakeup is not None and self._loop is not None
        loop, wakeup = self._loop, self._wakeup
        while True:
            await wakeup.wait()
            if self.batch_wait_s and len(self._pending) < self.max_batch_size:
                await asyncio.sleep(self.batch_wait_s)  # let callers that arrive together join
            wakeup.clear()  # anything submitted from here on sets it again
            if not self.has_pending():
                continue
            feed: Feed[T] = Feed(self, loop)
            try:
                await loop.run_in_executor(self._executor, self.runner, feed)
            except Exception as e:  # noqa: BLE001 - a failed batch fails its callers, not the server
                feed.fail_unreported(self._batch_error(e))
            else:
                feed.fail_unreported(EngineError(f"{self.name}: the runner returned without a result"))
            if self.has_pending():
                wakeup.set()

    def _batch_error(self, e: Exception) -> EngineError:
        """What the callers of a failed batch get: an EngineError (the engine failed, not their
        request: CUDA out of memory, a device lost), so simulations retry it on the next attempt
        instead of recording it as their own error. An EngineError passes unchanged."""
        if isinstance(e, EngineError):
            return e
        try:
            raise EngineError(f"{self.name}: a batch failed: {type(e).__name__}: {e}") from e
        except EngineError as wrapped:
            return wrapped

    async def aclose(self) -> None:
        """Stop batching and fail whatever is still queued; a later submit starts afresh."""
        task, self._task = self._task, None
        if task is not None and not task.done() and self._loop is asyncio.get_running_loop():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
        with self._lock:
            pending, self._pending = self._pending, deque()
        for p in pending:
            if not p.future.done():
                p.future.set_exception(EngineError(f"{self.name}: closed while the request was queued"))

    def shutdown(self) -> None:
        """Release the worker thread (after aclose); a shared one is left to its owner."""
        if self._own_executor:
            self._executor.shutdown(wait=False, cancel_futures=True)
