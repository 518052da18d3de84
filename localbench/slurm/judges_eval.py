"""`localbench judges eval --slurm`: one Slurm job per judge over the same gold set and eval
directory, then one job that writes the report once every judge's job has ended.

Each judge's job runs `localbench judges eval --judge J` with the eval's own settings into the
shared ``--out``: answers are keyed by judge (judge|item|variant|seed) and appended under the eval
folder's lock, eval.json is merged under it (``judging.gold_eval``), and each job has a response
cache of its own (<out>/slurm/cache/), so the jobs may run at once, on different nodes too. A job is resumable like
any eval: submitting again asks only what is missing. Job ids go to <out>/slurm/submission.json.
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from localbench.files import write_atomic
from localbench.runlog import RunFiles
from localbench.slurm.options import JobResources, SlurmOptions, SlurmOptionsError, parse_options
from localbench.slurm.render import _env, _exports, _setup_lines, _signal, resource_lines
from localbench.slurm.shell import Shell, quote, sbatch_value

REPORT = "report"


def read_options(path: Path | None) -> SlurmOptions:
    """Sbatch options from a YAML file: a ``slurm:`` mapping as in a run spec (or the file's top
    level); none: the cluster's defaults."""
    if path is None:
        return parse_options({}, "judges eval --slurm")
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise SlurmOptionsError(f"{path}: cannot read: {e}") from e
    if not isinstance(data, dict):
        raise SlurmOptionsError(f"{path}: a mapping of Slurm options (a run spec's `slurm:` section) is expected")
    return parse_options(data.get("slurm", data), str(path))


def _slug(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:60]


@dataclass
class EvalJob:
    key: str  # the judge, or "report"
    script: Path
    text: str


def _resources(o: SlurmOptions, on_gpu: bool) -> JobResources:
    """A judge that loads a model gets the options' resources; a synthetic judge (oracle,
    noisy:...) and the report job what a CPU merge job would (no GPU)."""
    if on_gpu:
        return JobResources.model_validate(o.model_dump(include=set(JobResources.model_fields)))
    return o.merge_resources(judge_on_gpu=False, judges=False)[0]


def render_job(o: SlurmOptions, out: Path, workdir: Path, name: str, res: JobResources, task: str,
               steps: list[tuple[str, list[str]]], comment: dict[str, str]) -> str:
    sbatch = [sbatch_value(f"--job-name={name}", "job_name"),
              sbatch_value(f"--output={out / RunFiles.SLURM / 'logs'}/%x-%j.out", "out"), Shell("--open-mode=append"),
              Shell("--requeue" if o.requeue else "--no-requeue"), *resource_lines(res)]
    sbatch += [sbatch_value(x, f"extra_sbatch[{i}]") for i, x in enumerate(o.extra_sbatch)] if res.gpus else []
    ctx = {**_setup_lines(o), **_signal(o), "exports": _exports(o, res, out), "workdir": quote(workdir),
           "sbatch": sbatch, "out": quote(out), "state_dir": quote(out / RunFiles.SLURM / "state"), "task": quote(task),
           "task_file": Shell(task), "gpus_total": res.gpus,
           "steps": [{"name": quote(n), "command": Shell(shlex.join(cmd))} for n, cmd in steps],
           "requeue": False, "max_requeues": 0, "merge": False, "ray": None, "serve_any": False,
           "serve_timeout": o.serve_timeout, **{k: quote(v) for k, v in comment.items()}}
    return _env().get_template("judges-eval.sbatch.j2").render(**ctx)


def eval_jobs(judges: list[str], gold: Path, out: Path, eval_args: list[str], o: SlurmOptions,
              workdir: Path) -> list[EvalJob]:
    """One job per judge (``eval_args``: the eval's settings, passed on as given), then the report."""
    from localbench.judging.synthetic import parse_synthetic

    out, gold = out.resolve(), gold.resolve()
    jobs = []
    for judge in judges:
        task = f"eval-{_slug(judge)}"
        # its own response cache: SQLite (WAL) must not be shared by jobs on different nodes
        cmd = ["localbench", "judges", "eval", "--judge", judge, "--gold", str(gold), "--out", str(out), *eval_args,
               "--cache", str(out / RunFiles.SLURM / "cache" / f"{task}.sqlite"), "--no-report"]
        res = _resources(o, on_gpu=parse_synthetic(judge) is None)
        name = o.job_name or f"lb-judges-eval-{_slug(judge)}"
        jobs.append(EvalJob(judge, out / RunFiles.SLURM / f"{task}.sbatch",
                            render_job(o, out, workdir, name if not o.job_name else f"{name}-{_slug(judge)}", res,
                                       task, [("eval", cmd)], {"judge": judge, "gold": str(gold)})))
    report = ["localbench", "judges", "report", str(out)]
    jobs.append(EvalJob(REPORT, out / RunFiles.SLURM / "report.sbatch",
                        render_job(o, out, workdir, f"{o.job_name or 'lb-judges-eval'}-report", _resources(o, False),
                                   "report", [("report", report)],
                                   {"judge": f"the report of {', '.join(judges)}", "gold": str(gold)})))
    return jobs


def commands(jobs: list[EvalJob], ids: dict[str, str]) -> list[list[str]]:
    """The sbatch calls: every judge's job, then the report after all of them (afterany: a judge
    that failed still leaves the others' numbers to report)."""
    evals = [j for j in jobs if j.key != REPORT]
    out = [["sbatch", "--parsable", str(j.script)] for j in evals]
    deps = ":".join(ids.get(j.key, f"<{j.key}>") for j in evals)
    out += [["sbatch", "--parsable", f"--dependency=afterany:{deps}", str(j.script)] for j in jobs if j.key == REPORT]
    return out


def dry_run(jobs: list[EvalJob], folder: Path) -> list[str]:
    """Write the scripts under ``folder``; the sbatch commands, job ids shown as <judge>."""
    moved = [EvalJob(j.key, folder / j.script.name, j.text) for j in jobs]
    for j in moved:
        write_atomic(j.script, j.text, mode=0o755)
    return [shlex.join(c) for c in commands(moved, {})]


def submit(jobs: list[EvalJob], out: Path, workdir: Path) -> dict[str, str]:
    """Submit every job; the job ids by judge (and "report"), also in <out>/slurm/submission.json."""
    from localbench.slurm.client import run_command
    from localbench.slurm.status import SlurmError
    from localbench.slurm.submit import sbatch

    (out / RunFiles.SLURM / "logs").mkdir(parents=True, exist_ok=True)
    ids: dict[str, str] = {}
    try:
        for j in jobs:
            write_atomic(j.script, j.text, mode=0o755)
            args = [] if j.key != REPORT else [f"--dependency=afterany:{':'.join(ids.values())}"]
            ids[j.key] = sbatch(j.script, args, workdir)
    except SlurmError:
        if ids:
            run_command(["scancel", *ids.values()])
        raise
    write_atomic(out / RunFiles.SLURM / "submission.json",
                 json.dumps({"submitted": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "jobs": ids}, indent=2) + "\n")
    return ids
