"""A micro-batcher: many concurrent callers, one forward pass.

Callers ``await batcher.submit(item)``. A background task waits for work, lingers a few
milliseconds so that callers arriving together land in the same batch, takes up to
``max_batch_size`` pending items and hands them to a blocking ``runner`` in a worker thread, so
the event loop keeps accepting requests while the model computes. The runner reports each item
as soon as it is done (a short reply does not wait for the longest one in its batch).

With ``group_key`` set, one batch holds only items with equal keys (a grammar backend that
takes one schema per batch); the others wait, in order, for a later batch.
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

Reporter = Callable[[int, Any, BaseException | None], None]
"""``report(index, result, error)``: called from the worker thread once per item of a batch."""

Runner = Callable[[list[T], Reporter], None]
"""Runs one batch to completion (blocking) and reports every item through the reporter."""


@dataclass
class _Pending(Generic[T]):
    item: T
    future: asyncio.Future
    key: Hashable


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
    ):
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.runner = runner
        self.max_batch_size = max_batch_size
        self.batch_wait_s = max(0.0, batch_wait_s)
        self.group_key = group_key
        self.name = name
        self.batch_sizes: list[int] = []  # size of every batch the runner was given, in order
        self.batch_keys: list[Hashable] = []  # the group key of each batch (None without grouping)
        self._pending: deque[_Pending[T]] = deque()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task | None = None

    async def submit(self, item: T) -> Any:
        """Queue one item and wait for its result (or the exception the runner reported for it)."""
        loop = asyncio.get_running_loop()
        self._ensure_running(loop)
        fut: asyncio.Future = loop.create_future()
        key = self.group_key(item) if self.group_key is not None else None
        self._pending.append(_Pending(item, fut, key))
        assert self._wakeup is not None
        self._wakeup.set()
        return await fut

    def _ensure_running(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the batching task on the caller's loop (again, if an earlier loop has gone)."""
        if self._loop is loop and self._task is not None and not self._task.done():
            return
        if self._loop is not loop:
            self._pending.clear()  # futures of a finished loop can never be awaited again
        self._loop = loop
        self._wakeup = asyncio.Event()
        self._task = loop.create_task(self._serve(), name=f"{self.name}-serve")

    def _take(self) -> list[_Pending[T]]:
        """Up to max_batch_size live items; with grouping, only those sharing the first item's key."""
        while self._pending and self._pending[0].future.done():  # cancelled callers
            self._pending.popleft()
        if not self._pending:
            return []
        if self.group_key is None:
            batch = []
            while self._pending and len(batch) < self.max_batch_size:
                p = self._pending.popleft()
                if not p.future.done():
                    batch.append(p)
            return batch
        key = self._pending[0].key
        batch, rest = [], deque()
        while self._pending:
            p = self._pending.popleft()
            if p.future.done():
                continue
            if p.key == key and len(batch) < self.max_batch_size:
                batch.append(p)
            else:
                rest.append(p)
        self._pending = rest
        return batch

    async def _serve(self) -> None:
        assert self._wakeup is not None and self._loop is not None
        loop = self._loop
        while True:
            await self._wakeup.wait()
            if self.batch_wait_s and len(self._pending) < self.max_batch_size:
                await asyncio.sleep(self.batch_wait_s)  # let callers that arrive together join
            batch = self._take()
            if not self._pending:
                self._wakeup.clear()
            if not batch:
                continue
            self.batch_sizes.append(len(batch))
            self.batch_keys.append(batch[0].key)
            report = self._reporter(loop, batch)
            try:
                await loop.run_in_executor(self._executor, self.runner, [p.item for p in batch], report)
            except Exception as e:  # noqa: BLE001 - a failed batch fails its callers, not the server
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(e)
            else:
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(EngineError(f"{self.name}: the runner returned without a result"))

    @staticmethod
    def _reporter(loop: asyncio.AbstractEventLoop, batch: list[_Pending[T]]) -> Reporter:
        def resolve(fut: asyncio.Future, result: Any, error: BaseException | None) -> None:
            if fut.done():
                return
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(result)

        def report(index: int, result: Any, error: BaseException | None = None) -> None:
            loop.call_soon_threadsafe(resolve, batch[index].future, result, error)

        return report

    async def aclose(self) -> None:
        """Stop batching and fail whatever is still queued; a later submit starts afresh."""
        task, self._task = self._task, None
        if task is not None and not task.done() and self._loop is asyncio.get_running_loop():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
        while self._pending:
            p = self._pending.popleft()
            if not p.future.done():
                p.future.set_exception(EngineError(f"{self.name}: closed while the request was queued"))

    def shutdown(self) -> None:
        """Release the worker thread (after aclose)."""
        self._executor.shutdown(wait=False, cancel_futures=True)
