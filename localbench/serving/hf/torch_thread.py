"""One thread per process for the ``hf`` engine's torch work: loading weights and decoding.

Why: PyTorch's CPU kernels run on an OpenMP thread team that belongs to the thread that calls
them. Once the main thread has run torch (loading a model), a second thread's team competes with
it: on a 2-core machine one SmolLM2 decode step took 41-49 ms from a worker thread against
22-24 ms when the same worker had also loaded the model and the main thread had run no torch at
all. So every hf engine loads and decodes on this one thread, and the event loop (prompt
rendering, tokenizing, validation) stays on the main thread. Several hf engines in one process
take turns on it, which on a CPU is what they would do anyway.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

R = TypeVar("R")

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_thread_id: int | None = None


def executor() -> ThreadPoolExecutor:
    """The process's torch thread (started on first use)."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="localbench-torch",
                                           initializer=_remember_thread)
        return _executor


def _remember_thread() -> None:
    global _thread_id
    _thread_id = threading.get_ident()


def run(fn: Callable[..., R], *args, **kwargs) -> R:
    """Call ``fn`` on the torch thread and wait for it (directly, when already there)."""
    if threading.get_ident() == _thread_id:
        return fn(*args, **kwargs)
    return executor().submit(fn, *args, **kwargs).result()
