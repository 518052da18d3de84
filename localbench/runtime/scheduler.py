"""Run many simulations at once over shared clients, with progress on stderr.

Turn order inside one simulation is sequential (each speaker sees the previous message), so the
parallelism comes from running many simulations concurrently: every live simulation has its next
request in flight, and the engine batches them. ``concurrency`` bounds how many simulations are
live at a time. A simulation that raises is reported through ``on_error`` and the rest go on.
"""

from __future__ import annotations

import asyncio
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterable, Sequence

from localbench.serving.client import ClientStats


@dataclass
class Job:
    """One unit of work: a key (unique in the run) and a coroutine factory."""

    key: str
    run: Callable[[], Awaitable[Any]]
    label: str = ""


@dataclass
class JobError:
    key: str
    error: str
    traceback: str
    exception: BaseException | None = None


@dataclass
class ScheduleReport:
    total: int
    done: int = 0
    errors: list[JobError] = field(default_factory=list)
    wall_s: float = 0.0


LOG_EVERY_S = 30.0


class Progress:
    """Progress on stderr: simulations done/total, requests in flight, tokens/s.

    ``mode`` is "bar" (a live rich bar, for terminals), "log" (a plain line every LOG_EVERY_S
    seconds and at the end, for batch logs such as Slurm's) or "off".
    """

    def __init__(self, total: int, stats: Sequence[ClientStats], description: str, mode: str):
        self.total = total
        self.stats = list(stats)
        self.mode = mode
        self.description = description
        self._progress = None
        self._task = None
        self._tokens0 = sum(s.tokens_out for s in self.stats)
        self._t0 = time.monotonic()
        self._last_log = self._t0
        self._state = (0, 0)
        if mode == "bar":
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._progress = RichProgress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[in_flight]} in flight"), TextColumn("{task.fields[tps]:.1f} tok/s"),
                TextColumn("{task.fields[errors]} errors"), TimeElapsedColumn(),
                console=Console(stderr=True), transient=False,
            )
            self._task = self._progress.add_task(description, total=total, in_flight=0, tps=0.0, errors=0)

    def in_flight(self) -> int:
        return sum(s.in_flight for s in self.stats)

    def tokens_per_s(self) -> float:
        dt = time.monotonic() - self._t0
        return (sum(s.tokens_out for s in self.stats) - self._tokens0) / dt if dt > 0 else 0.0

    def line(self) -> str:
        done, errors = self._state
        return (f"{self.description}: {done}/{self.total} done, {errors} errors, {self.in_flight()} requests in "
                f"flight, {self.tokens_per_s():.1f} tok/s, {time.monotonic() - self._t0:.0f} s")

    def update(self, done: int, errors: int) -> None:
        self._state = (done, errors)
        if self._progress is not None:
            self._progress.update(self._task, completed=done, in_flight=self.in_flight(),
                                  tps=self.tokens_per_s(), errors=errors)
        elif self.mode == "log" and time.monotonic() - self._last_log >= LOG_EVERY_S:
            self._last_log = time.monotonic()
            print(self.line(), file=sys.stderr, flush=True)

    def __enter__(self) -> "Progress":
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()
        elif self.mode == "log":
            print(self.line(), file=sys.stderr, flush=True)


async def run_jobs(
    jobs: Iterable[Job],
    *,
    concurrency: int,
    on_done: Callable[[Job, Any], None],
    on_error: Callable[[Job, JobError], None] | None = None,
    stats: Sequence[ClientStats] = (),
    progress: bool | None = None,
    description: str = "simulations",
) -> ScheduleReport:
    """Run every job with at most ``concurrency`` live at once; results go to ``on_done`` as each
    finishes (so a crash loses only unfinished work). ``progress``: True a live bar, False none,
    None a bar on a terminal and periodic log lines otherwise."""
    jobs = list(jobs)
    report = ScheduleReport(total=len(jobs))
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    gate = asyncio.Semaphore(concurrency)
    mode = ("bar" if sys.stderr.isatty() else "log") if progress is None else ("bar" if progress else "off")
    t0 = time.monotonic()

    with Progress(len(jobs), stats, description, mode) as bar:
        async def one(job: Job) -> None:
            async with gate:
                try:
                    result = await job.run()
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # one simulation failing must not stop the others
                    err = JobError(job.key, f"{type(e).__name__}: {e}", traceback.format_exc(), e)
                    report.errors.append(err)
                    if on_error is not None:
                        on_error(job, err)
                else:
                    on_done(job, result)
                    report.done += 1
            bar.update(report.done, len(report.errors))

        async def ticker() -> None:
            while True:
                await asyncio.sleep(0.5)
                bar.update(report.done, len(report.errors))

        tick = asyncio.create_task(ticker())
        try:
            await asyncio.gather(*(one(j) for j in jobs))
        finally:
            tick.cancel()
            bar.update(report.done, len(report.errors))
    report.wall_s = time.monotonic() - t0
    return report
