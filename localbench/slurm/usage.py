"""GPU-hours of a Slurm run, from the tasks' own timers (and sacct where the cluster has accounting).

Each run of a task (the first, every requeue, every resubmission) appends one line to
``RUN/slurm/state/<task>.runs.jsonl`` as it exits: start and end (epoch seconds), nodes and GPUs.
A task still running has ``RUN/slurm/state/<task>.running`` (its start); it counts up to now and
is listed in ``in_progress``. The summary is recorded in the run's spec.yaml as ``slurm.usage``
(by the merge, and by the merge job again before each later step, so that the report, its last
step, sees the judging too), where the report reads it.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from localbench.slurm.client import run_command
from localbench.slurm.layout import RunLayout


def _lines(path: Path) -> list[dict[str, Any]]:
    out = []
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue  # a line cut off by a kill
        if isinstance(d, dict):
            out.append(d)
    return out


def _hours(seconds: float) -> float:
    return round(seconds / 3600, 4)


def parse_sacct_usage(stdout: str) -> dict[str, float]:
    """`sacct -D -X -P -n -o JobID,ElapsedRaw,AllocTRES` lines -> GPU-seconds and seconds, summed.

    ``-D`` lists every run of a requeued job; AllocTRES names the GPUs (``gres/gpu=4``, or
    ``gres/gpu:a100=4``) of the whole allocation, all nodes together.
    """
    gpu_s = wall_s = 0.0
    for line in stdout.splitlines():
        parts = line.split("|")
        if len(parts) < 3 or not parts[1].strip().isdigit():
            continue
        elapsed = float(parts[1])
        m = re.search(r"gres/gpu(?::[^=,]+)?=(\d+)", parts[2])
        gpu_s += elapsed * (int(m.group(1)) if m else 0)
        wall_s += elapsed
    return {"gpu_hours": _hours(gpu_s), "task_hours": _hours(wall_s)}


def sacct_usage(job_ids: list[str]) -> dict[str, float] | None:
    """The scheduler's own accounting of these jobs, or None without slurmdbd."""
    if not job_ids:
        return None
    r = run_command(["sacct", "-D", "-X", "-P", "-n", "-j", ",".join(job_ids), "-o", "JobID,ElapsedRaw,AllocTRES"])
    if r is None or r.returncode != 0:
        return None
    return parse_sacct_usage(r.stdout)


def summarize(run_dir: str | Path, now: float | None = None, with_sacct: bool = True) -> dict[str, Any] | None:
    """The run's GPU-hours (see the module docstring); None for a run not submitted to Slurm."""
    layout = RunLayout(run_dir)
    if not layout.submission_file.exists():
        return None
    now = time.time() if now is None else now
    gpu_s = {"shards": 0.0, "merge": 0.0}
    task_s = 0.0
    runs = 0
    in_progress = []
    state = layout.state
    for f in sorted(state.glob("*.runs.jsonl")) if state.is_dir() else []:
        for d in _lines(f):
            seconds = max(0.0, float(d.get("end", 0)) - float(d.get("start", 0)))
            kind = "merge" if d.get("task") == "merge" else "shards"
            gpu_s[kind] += seconds * float(d.get("gpus") or 0)
            task_s += seconds
            runs += 1
    for f in sorted(state.glob("*.running")) if state.is_dir() else []:
        for d in _lines(f)[:1]:
            seconds = max(0.0, now - float(d.get("start", now)))
            kind = "merge" if d.get("task") == "merge" else "shards"
            gpu_s[kind] += seconds * float(d.get("gpus") or 0)
            task_s += seconds
            in_progress.append(str(d.get("task")))
    out: dict[str, Any] = {
        "source": "task timers",
        "gpu_hours": _hours(gpu_s["shards"] + gpu_s["merge"]),
        "gpu_hours_shards": _hours(gpu_s["shards"]),
        "gpu_hours_merge": _hours(gpu_s["merge"]),
        "task_hours": _hours(task_s),
        "task_runs": runs,
        "in_progress": in_progress,
        "as_of": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now)),
        "sacct_gpu_hours": None,
    }
    if with_sacct:
        try:
            acct = sacct_usage(layout.read_record().job_ids())
        except Exception:  # noqa: BLE001 - accounting is a bonus; the timers stand on their own
            acct = None
        if acct is not None:
            out["sacct_gpu_hours"] = acct["gpu_hours"]
            out["source"] = "task timers; sacct"
    return out


def line(u: dict[str, Any]) -> str:
    """One line for `slurm status` and the logs."""
    s = (f"GPU-hours: {u['gpu_hours']:.2f} (shards {u['gpu_hours_shards']:.2f}, merge {u['gpu_hours_merge']:.2f}) "
         f"over {u['task_runs']} task run(s), {u['task_hours']:.2f} task-hours")
    if u.get("sacct_gpu_hours") is not None:
        s += f"; sacct: {u['sacct_gpu_hours']:.2f} GPU-hours"
    if u.get("in_progress"):
        s += f"; still running: {', '.join(u['in_progress'])} (counted up to now)"
    return s


def record_usage(run_dir: str | Path) -> dict[str, Any] | None:
    """Write the summary into RUN/spec.yaml's ``slurm`` section (``slurm.usage``) if the run was
    submitted to Slurm and has a spec.yaml; returns it."""
    from localbench.runlog import RunDir, RunPaths

    u = summarize(run_dir)
    if u is None or not RunPaths(run_dir).spec_file.exists():
        return u
    rd = RunDir(run_dir)
    section = dict(rd.read_spec().get("slurm") or {})
    section["usage"] = u
    rd.update_provenance("slurm", section)
    return u
