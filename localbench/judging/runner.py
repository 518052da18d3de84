"""Run judge requests in one batched pass and append each answer to judgments.jsonl.

Benchmark-agnostic: a benchmark turns finished simulations into JudgeTasks (a key, a request and
a decoder); this runs every task not yet in the store concurrently over one client, so the engine
batches them, and records successes and failures alike. Rerunning skips keys already written.

Every answer the runner pays for is written under its own key: two tasks that share a key are
refused before anything is sent, and a key that another writer took while a task ran is an error
(``JudgmentNotRecorded``), never a result that silently vanishes.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from localbench.runtime.records import JsonlStore
from localbench.runtime.scheduler import Progress
from localbench.serving.client import StructuredClient
from localbench.serving.types import GenerationRequest


@dataclass
class JudgeTask:
    key: str
    request: GenerationRequest
    decode: Callable[[Any], dict[str, Any]]  # parsed answer -> label in benchmark terms
    meta: dict[str, Any] = field(default_factory=dict)  # recorded as-is (target, rubric hash, ...)


class JudgmentNotRecorded(RuntimeError):
    """A judge task whose answer could not be written: its key is taken (a bug, or two writers)."""


def check_unique_keys(tasks: list[JudgeTask]) -> None:
    """Raise JudgmentNotRecorded when two tasks share a key: only one of their answers could be kept."""
    seen: dict[str, JudgeTask] = {}
    for t in tasks:
        if t.key in seen:
            raise JudgmentNotRecorded(
                f"two judge tasks share the key '{t.key}' (targets {seen[t.key].meta.get('target')!r} and "
                f"{t.meta.get('target')!r}): one answer would be lost; each call needs its own target")
        seen[t.key] = t


@dataclass
class JudgeRunSummary:
    total: int = 0
    skipped: int = 0  # already in the store (resumed)
    done: int = 0
    failed: int = 0


async def run_judge_tasks(client: StructuredClient, tasks: list[JudgeTask], store: JsonlStore,
                          max_concurrency: int = 64, show_progress: bool | None = None) -> JudgeRunSummary:
    """Run every task whose key is not in ``store``; append one record per task as it finishes."""
    summary = JudgeRunSummary(total=len(tasks))
    check_unique_keys(tasks)
    todo = [t for t in tasks if t.key not in store]
    summary.skipped = len(tasks) - len(todo)
    sem = asyncio.Semaphore(max_concurrency)
    mode = ("bar" if sys.stderr.isatty() else "log") if show_progress is None else ("bar" if show_progress else "off")
    progress = Progress(len(todo), [client.stats], "judging", mode if todo else "off")

    async def one(task: JudgeTask) -> None:
        async with sem:
            res = await client.generate(task.request)
        label, failure = None, res.failure
        if res.ok:
            data = res.parsed.model_dump() if hasattr(res.parsed, "model_dump") else res.parsed
            try:
                label = task.decode(data)
            except (KeyError, ValueError, TypeError) as e:  # schema-valid but undecodable: a failure too
                failure = f"undecodable answer: {e!r}"
        if not store.append({"key": task.key, **task.meta, "judge_model": client.model_name, "label": label,
                             "failure": failure, "text": res.text if failure else None, "call": res.summary()}):
            raise JudgmentNotRecorded(
                f"{store.path}: key '{task.key}' was written by someone else while this task ran, so its "
                "answer was not recorded (is another process judging into the same file?)")
        summary.done += 1
        summary.failed += failure is not None
        progress.update(summary.done, summary.failed)

    with progress:
        await asyncio.gather(*(one(t) for t in todo))
    return summary
