"""Run judge requests in one batched pass and append each answer to judgments.jsonl.

Benchmark-agnostic: a benchmark turns finished simulations into JudgeTasks (a key, a request and
a decoder); this runs every task not yet in the store concurrently over one client, so the engine
batches them, and records successes and failures alike. Rerunning skips keys already written.

Every answer the runner pays for is written under its own key: two tasks that share a key are
refused before anything is sent, and a key that another writer took while a task ran is an error
(``JudgmentNotRecorded``), never a result that silently vanishes. A prompt that leaves no room for
the answer in the judge's context window is recorded as a failed judgment without being sent (the
engine would refuse it, and one refusal must not abort the whole pass): like any failure it is
counted, and scoring never reads it as "no leak".
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from localbench.judging.calls import too_long
from localbench.runlog import Judgment
from localbench.runtime.scheduler import Progress
from localbench.serving.client import StructuredClient
from localbench.serving.types import GenerationRequest, PromptTooLongError


JUDGE_TEMPERATURE = 0.0
"""Judges decode greedily: the temperature every judge request is made with and every judge
stage records in its provenance."""


@dataclass
class JudgeTask:
    key: str
    request: GenerationRequest
    decode: Callable[[Any], dict[str, Any]]  # parsed answer -> label in benchmark terms
    meta: dict[str, Any] = field(default_factory=dict)  # Judgment fields (target, rubric hash, ...); others go to its payload


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
    done: int = 0  # recorded by this pass (answers and failures)
    failed: int = 0
    too_long: int = 0  # of the failed: prompts that did not fit the judge's context (never sent)


def judgment(task: JudgeTask, **answer: Any) -> Judgment:
    """A run's record of one task: its meta as Judgment fields (the rest in the payload) and the answer."""
    fields = set(Judgment.model_fields)
    known = {k: v for k, v in task.meta.items() if k in fields}
    extra = {k: v for k, v in task.meta.items() if k not in fields}
    return Judgment(key=task.key, **known, **answer, payload=extra)


def answer_record(task: JudgeTask, **answer: Any) -> dict[str, Any]:
    """A gold eval's record of one task: its meta and the answer, as one JSON object."""
    return {"key": task.key, **task.meta, **answer}


class Store(Protocol):
    def __contains__(self, key: str) -> bool: ...

    def append(self, record: Any) -> bool: ...

    @property
    def path(self) -> Any: ...


async def run_judge_tasks(client: StructuredClient, tasks: list[JudgeTask], store: Store,
                          max_concurrency: int = 64, show_progress: bool | None = None,
                          record_of: Callable[..., Any] = judgment) -> JudgeRunSummary:
    """Run every task whose key is not in ``store``; append one record per task as it finishes.

    ``record_of(task, judge_model=, label=, failure=, text=, call=)`` makes what is stored: a run's
    typed ``Judgment`` by default (RecordStore), a gold eval's ``answer_record`` (its JsonlStore).
    """
    summary = JudgeRunSummary(total=len(tasks))
    check_unique_keys(tasks)
    todo = [t for t in tasks if t.key not in store]
    summary.skipped = len(tasks) - len(todo)
    sem = asyncio.Semaphore(max_concurrency)
    mode = ("bar" if sys.stderr.isatty() else "log") if show_progress is None else ("bar" if show_progress else "off")
    progress = Progress(len(todo), [client.stats], "judging", mode if todo else "off")

    def record(task: JudgeTask, label: dict[str, Any] | None, failure: str | None, text: str | None,
               call: dict[str, Any] | None) -> None:
        if not store.append(record_of(task, judge_model=client.model_name, label=label, failure=failure, text=text,
                                      call=call)):
            raise JudgmentNotRecorded(
                f"{store.path}: key '{task.key}' was written by someone else while this task ran, so its "
                "answer was not recorded (is another process judging into the same file?)")
        summary.done += 1
        summary.failed += failure is not None
        progress.update(summary.done, summary.failed)

    def refuse(task: JudgeTask, why: str) -> None:
        summary.too_long += 1
        record(task, None, why, None, None)

    async def one(task: JudgeTask) -> None:
        why = too_long(client, task.request.messages, task.request.max_tokens)
        if why is not None:
            refuse(task, why)
            return
        try:
            async with sem:
                res = await client.generate(task.request)
        except PromptTooLongError as e:  # the engine counted differently: still a recorded failure
            refuse(task, f"prompt does not fit the context of '{client.model_name}' (not sent): {e}")
            return
        label, failure = None, res.failure
        if res.ok:
            data = res.parsed.model_dump() if hasattr(res.parsed, "model_dump") else res.parsed
            try:
                label = task.decode(data)
            except (KeyError, ValueError, TypeError) as e:  # schema-valid but undecodable: a failure too
                failure = f"undecodable answer: {e!r}"
        record(task, label, failure, res.text if failure else None, res.summary())

    with progress:
        await asyncio.gather(*(one(t) for t in todo))
    return summary
