"""`localbench study submit`: a study's runs as Slurm jobs, each judge served once for all of them.

Per (benchmark, model) run: the run's own shard array and merge job (``slurm.plan`` /
``slurm.render``, as `localbench slurm submit` renders them; RUN/slurm/ holds them, so `localbench
slurm status|resubmit|cancel RUN` work on a study's run too). Per distinct judge preset of the
study, not per benchmark: one **judge server** job that runs `localbench serve PRESET` and writes
its base URL to ``<out>/slurm/judge-<preset>.url`` once it answers. One server per preset because a
judge is a model, not a benchmark: a study whose three benchmarks share one judge loads it once, and
a benchmark with its own judge gets its own server. Each judged run's merge job waits for that file
(``slurm.judge_url_file``), judges with the openai engine at the URL, then scores and reports; it
holds no GPU. The server starts when the first array it serves has ended (an OR of ``afterany``
dependencies) and is cancelled by a small **judge-stop** job that depends (``afterany``) on every
merge job it serves, so it is stopped however those end; its own time limit is the backstop.

Job ids go to ``<out>/slurm/study-submission.json``; `study status` reads the cluster through them.
A run already reported is not submitted again, so submitting the study a second time (after a
failure, or with a model added) submits what is left, each run resuming from its files, with a
judge server of its own.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from localbench.files import write_atomic
from localbench.runlog import RunFiles
from localbench.slurm.judge_url import server_state_file
from localbench.slurm.options import JobResources, SlurmOptions, SlurmOptionsError, command_name, parse_options
from localbench.slurm.plan import RunPlan, make_plan
from localbench.slurm.render import _env, _exports, _setup_lines, _signal, resource_lines, serve_line
from localbench.slurm.shell import Shell, quote, sbatch_value
from localbench.study.plan import PlannedRun, plan_runs
from localbench.study.run import finished
from localbench.study.spec import Study

JUDGE_SERVER_KEY = "judge_server"  # slurm.judge_server: the judge server jobs' resources (JobResources)
STOP_TIME = "00:10:00"
SERVE_HOST = "0.0.0.0"  # the merge jobs run on other nodes


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", Path(name).stem if "/" in name else name)[:60]


@dataclass
class JudgeServer:
    """One judge preset served for every run of the study it judges."""

    preset: str
    runs: list[PlannedRun]
    folder: Path  # <out>/slurm
    resources: JobResources
    job_name: str

    @property
    def url_file(self) -> Path:
        return self.folder / f"judge-{_slug(self.preset)}.url"

    @property
    def script(self) -> Path:
        return self.folder / f"judge-{_slug(self.preset)}.sbatch"

    @property
    def stop_script(self) -> Path:
        return self.folder / f"judge-{_slug(self.preset)}-stop.sbatch"


@dataclass
class StudyPlan:
    study: Study
    folder: Path  # <out>/slurm: the study's own Slurm files
    options: SlurmOptions  # the study's `slurm:` (environment of the judge server jobs)
    runs: list[tuple[PlannedRun, RunPlan]] = field(default_factory=list)  # the runs to submit
    servers: dict[str, JudgeServer] = field(default_factory=dict)
    reported: list[PlannedRun] = field(default_factory=list)  # runs already reported: nothing to submit

    def server_of(self, run: PlannedRun) -> JudgeServer | None:
        return next((s for s in self.servers.values() if run in s.runs), None)

    @property
    def log_dir(self) -> Path:
        return self.folder / "logs"

    @property
    def record_file(self) -> Path:
        return self.folder / "study-submission.json"


def _judged_remotely(opts: dict[str, Any]) -> bool:
    """A run whose merge job judges (the default post-merge commands, no judging in the shards)."""
    o = parse_options(opts)
    return not o.judge_per_shard and any(command_name(c) == "judge" for c in o.after_merge_commands())


def _server_resources(study: Study, where: str) -> JobResources:
    """slurm.judge_server's fields over the study's own resources (what its arrays ask for)."""
    base = {k: v for k, v in study.slurm.items() if k in JobResources.model_fields and k != "nodes"}
    own = study.slurm.get(JUDGE_SERVER_KEY) or {}
    if not isinstance(own, dict):
        raise SlurmOptionsError(f"{where}: field 'slurm.{JUDGE_SERVER_KEY}': a mapping of job resources "
                                f"({', '.join(JobResources.model_fields)})")
    try:
        return JobResources.model_validate({**base, **own})
    except ValueError as e:
        raise SlurmOptionsError(f"{where}: field 'slurm.{JUDGE_SERVER_KEY}': {e}") from e


def plan_study(study: Study, workdir: str | Path | None = None) -> StudyPlan:
    """Every run's Slurm plan, and the judge servers; a SlurmOptionsError names the bad field."""
    where = str(study.path or "study")
    folder = study.out_dir / RunFiles.SLURM
    bare = study.model_copy(update={"slurm": {k: v for k, v in study.slurm.items() if k != JUDGE_SERVER_KEY}})
    options = parse_options(bare.slurm, where)
    wd = workdir or (study.path.parent if study.path else None)
    resources = _server_resources(study, where)
    plan = StudyPlan(study=study, folder=folder, options=options)
    every = plan_runs(bare)
    plan.reported = [r for r in every if finished(r)]
    runs = [r for r in every if r not in plan.reported]  # a second submit: what is left
    for run in runs:
        if run.spec.judged and _judged_remotely(run.spec.slurm):
            preset = run.judge
            if preset not in plan.servers:
                plan.servers[preset] = JudgeServer(
                    preset, [], folder, resources,
                    f"lb-{_slug(study.title)}-judge-{_slug(preset)}"[:80])
            plan.servers[preset].runs.append(run)
    for run in runs:
        spec = run.spec
        server = plan.server_of(run)
        if server is not None:
            spec = spec.model_copy(update={"slurm": {**spec.slurm, "judge_url_file": str(server.url_file)}})
        plan.runs.append((run, make_plan(spec, f"{where} (run {run.benchmark} × {run.model})", workdir=wd)))
    return plan


def server_fit_problems(plan: StudyPlan) -> list[str]:
    """Judge servers whose preset does not fit the GPUs ``slurm.judge_server`` asks for: too few
    for its tensor x pipeline parallel size, or too little memory where the gres names the GPU
    kind (``serving.fit``). The server serves the preset as it is."""
    from localbench.serving.fit import check_fit, gpu_of_gres
    from localbench.serving.presets import load_preset

    out = []
    for preset, server in plan.servers.items():
        p, res = load_preset(preset), server.resources
        need = p.tensor_parallel_size * p.pipeline_parallel_size
        if p.needs_gpu and res.gpus < need:
            out.append(f"the judge server of {preset} asks for {res.gpus} GPU(s) (gres {res.gres!r}), but the "
                       f"preset runs on {need} (tensor x pipeline parallel)")
            continue
        on = gpu_of_gres(res.gres)
        fit = check_fit(p, on) if on is not None and p.needs_gpu else None
        if fit is not None and not fit.fits:
            out.append(f"the judge server: {fit.line()}")
    return out


# ---- rendering ------------------------------------------------------------------------------

def _sbatch_lines(name: str, log_dir: Path, res: JobResources, requeue: bool) -> list[Shell]:
    return [sbatch_value(f"--job-name={name}", "job_name"), sbatch_value(f"--output={log_dir}/%x-%j.out", "log_dir"),
            Shell("--open-mode=append"), Shell("--requeue" if requeue else "--no-requeue"), *resource_lines(res)]


def render_server(plan: StudyPlan, server: JudgeServer) -> str:
    o = plan.options
    res = server.resources
    command = o.serve_command.replace("--host 127.0.0.1", f"--host {SERVE_HOST}")
    task = server_state_file(server.url_file).stem  # judge-<preset>: its state file is the one wait-judge reads
    ctx = {
        **_setup_lines(o), **_signal(o),
        "exports": _exports(o, res, plan.study.out_dir),
        "workdir": quote(plan.runs[0][1].workdir),
        "sbatch": _sbatch_lines(server.job_name, plan.log_dir, res, o.requeue),
        "preset": quote(server.preset), "runs": len(server.runs), "url_file": quote(server.url_file),
        "state_dir": quote(plan.folder / "state"), "task": quote(task), "task_file": Shell(task),
        "gpus_total": res.gpus, "serve_logs": quote(plan.folder / "servers" / task),
        "judge_serve": serve_line(command, server.preset, o.serve_timeout),
        "requeue": False, "max_requeues": 0, "merge": False, "ray": None, "serve_any": True,
        "serve_timeout": o.serve_timeout,
    }
    return _env().get_template("judge-server.sbatch.j2").render(**ctx)


def stop_resources(plan: StudyPlan) -> JobResources:
    """The judge-stop job: one CPU for a few minutes, on the partition a CPU merge job would use."""
    res, _ = plan.options.merge_resources(judge_on_gpu=False, judges=False)
    return res.model_copy(update={"cpus_per_task": 1, "mem": "500M", "time": STOP_TIME, "gres": None})


def render_stop(plan: StudyPlan, server: JudgeServer) -> str:
    ctx = {"sbatch": _sbatch_lines(f"{server.job_name}-stop", plan.log_dir, stop_resources(plan), False),
           "preset": quote(server.preset), "url_file": quote(server.url_file)}
    return _env().get_template("judge-stop.sbatch.j2").render(**ctx)


# ---- what gets submitted, in order ------------------------------------------------------------

@dataclass
class Step:
    """One sbatch call: its script, and its dependency on jobs named by key (filled in at submit)."""

    key: str  # "array:asb/qwen", "merge:asb/qwen", "judge:<preset>", "stop:<preset>"
    script: Path
    text: str
    after: str = ""  # "afterok", "afterany", or "afterany?" (any one of them: OR)
    deps: list[str] = field(default_factory=list)  # keys of the jobs it depends on
    arg: str | None = None  # key of a job whose id is the script's argument


def run_key(run: PlannedRun) -> str:
    return f"{run.benchmark}/{run.model}"


def steps(plan: StudyPlan, script_dir: Path | None = None) -> list[Step]:
    """Every sbatch call of the study, in submission order: the arrays, the judge servers (each
    once the first array it serves has ended), the merge jobs, the judge-stop jobs. ``script_dir``:
    where a dry run writes the scripts (default: each run's RUN/slurm/, the study's <out>/slurm/)."""
    from localbench.slurm.render import render_array, render_merge

    def where(default: Path, *parts: str) -> Path:
        return script_dir.joinpath(*parts) if script_dir else default

    out: list[Step] = []
    for run, rp in plan.runs:
        k = run_key(run)
        out.append(Step(f"array:{k}", where(rp.layout.script("array", 1), run.benchmark, _slug(run.model), "array.sbatch"),
                        render_array(rp).script))
    for preset, server in plan.servers.items():
        out.append(Step(f"judge:{preset}", where(server.script, server.script.name), render_server(plan, server),
                        "afterany?", [f"array:{run_key(r)}" for r in server.runs]))
    for run, rp in plan.runs:
        k = run_key(run)
        out.append(Step(f"merge:{k}", where(rp.layout.script("merge", 1), run.benchmark, _slug(run.model), "merge.sbatch"),
                        render_merge(rp).script, "afterok", [f"array:{k}"]))
    for preset, server in plan.servers.items():
        out.append(Step(f"stop:{preset}", where(server.stop_script, server.stop_script.name), render_stop(plan, server),
                        "afterany", [f"merge:{run_key(r)}" for r in server.runs], arg=f"judge:{preset}"))
    return out


def dependency(step: Step, ids: dict[str, str]) -> str | None:
    if not step.deps:
        return None
    if step.after == "afterany?":
        return "--dependency=" + "?".join(f"afterany:{ids[d]}" for d in step.deps)
    return f"--dependency={step.after}:" + ":".join(ids[d] for d in step.deps)


def sbatch_command(step: Step, ids: dict[str, str]) -> list[str]:
    dep = dependency(step, ids)
    return ["sbatch", "--parsable", *([dep] if dep else []), str(step.script),
            *([ids[step.arg]] if step.arg else [])]


def dry_run(plan: StudyPlan, out: Path) -> list[str]:
    """Write every script under ``out`` and return the sbatch commands, job ids shown as <key>."""
    todo = steps(plan, out)
    for s in todo:
        write_atomic(s.script, s.text, mode=0o755)
    names = {s.key: f"<{s.key}>" for s in todo}
    return [shlex.join(sbatch_command(s, names)) + f"  # job id: <{s.key}>" for s in todo]


# ---- submission ---------------------------------------------------------------------------------

class ServerRecord(BaseModel):
    preset: str
    job: str
    stop_job: str | None = None
    url_file: str
    runs: list[str]  # run directories it judges


class StudyRecord(BaseModel):
    """<out>/slurm/study-submission.json: the study's jobs (each run's own are in RUN/slurm/submission.json)."""

    study: str
    submitted: str
    runs: dict[str, str] = Field(default_factory=dict)  # "benchmark/model" -> run directory
    servers: list[ServerRecord] = Field(default_factory=list)


def read_record(plan: StudyPlan) -> StudyRecord | None:
    f = plan.record_file
    return StudyRecord.model_validate_json(f.read_text()) if f.exists() else None


def submit_study(plan: StudyPlan, log=lambda line: None) -> StudyRecord:
    """Submit every job of the study; refuses while one of its runs is still queued or running."""
    import time

    from localbench.slurm.client import run_command
    from localbench.slurm.layout import JobSubmission
    from localbench.slurm.status import SlurmError, run_status
    from localbench.slurm.submit import _new_record, sbatch, write_plan_files

    for run, rp in plan.runs:
        if rp.layout.submission_file.exists():
            st = run_status(rp.layout.run)
            if any(s.active for s in st.shards) or (st.merge and st.merge.state in ("PENDING", "RUNNING")):
                raise SlurmError(f"{rp.layout.run}: run {run_key(run)} is already submitted and still active; "
                                 f"see `localbench study status {plan.study.path}`")
    plan.folder.mkdir(parents=True, exist_ok=True)
    plan.log_dir.mkdir(parents=True, exist_ok=True)
    for server in plan.servers.values():  # an earlier server's URL and end are stale
        server.url_file.unlink(missing_ok=True)
        server_state_file(server.url_file).unlink(missing_ok=True)
    for _, rp in plan.runs:
        write_plan_files(rp)
    ids: dict[str, str] = {}
    todo = steps(plan)
    try:
        for s in todo:
            write_atomic(s.script, s.text, mode=0o755)
            dep = dependency(s, ids)
            ids[s.key] = sbatch(s.script, [dep] if dep else [], plan.runs[0][1].workdir,
                                [ids[s.arg]] if s.arg else None)
            log(f"{s.key}: job {ids[s.key]}")
    except SlurmError:
        if ids:
            run_command(["scancel", *ids.values()])  # nothing half-submitted stays queued
        raise
    rec = StudyRecord(study=str(plan.study.path or plan.study.title), submitted=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    old = read_record(plan)
    if old is not None:  # an earlier submission's runs and servers stay listed (status reads them)
        rec.runs, rec.servers = dict(old.runs), list(old.servers)
    for run, rp in plan.runs:
        k = run_key(run)
        rec.runs[k] = str(rp.layout.run)
        run_rec = _new_record(rp)
        if rp.layout.submission_file.exists():
            run_rec.submissions = rp.layout.read_record().submissions
        run_rec.submissions.append(JobSubmission(array_job=ids[f"array:{k}"], merge_job=ids[f"merge:{k}"],
                                                 shards=list(range(rp.num_shards)),
                                                 array_script=str(rp.layout.script("array", 1)),
                                                 merge_script=str(rp.layout.script("merge", 1))))
        rp.layout.write_record(run_rec)
    for preset, server in plan.servers.items():
        rec.servers.append(ServerRecord(preset=preset, job=ids[f"judge:{preset}"], stop_job=ids[f"stop:{preset}"],
                                        url_file=str(server.url_file),
                                        runs=[str(rp.layout.run) for r, rp in plan.runs if r in server.runs]))
    write_atomic(plan.record_file, json.dumps(rec.model_dump(), indent=2) + "\n")
    return rec

