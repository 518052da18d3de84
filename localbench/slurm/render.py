"""Render a RunPlan into sbatch scripts from the jinja2 templates in slurm/templates/.

The template environment's finalize hook refuses any value that was not made safe by
localbench.slurm.shell, so every interpolated value is either shell-quoted or a checked #SBATCH
value; a template that forgets to quote fails to render.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from localbench.paths import REPO_ROOT
from localbench.runlog import RunPaths
from localbench.slurm.options import JobResources, SlurmOptions, command_name
from localbench.slurm.plan import RunPlan
from localbench.slurm.shell import Shell, finalize, quote, quote_with_vars, sbatch_value, shell_line

_RESOURCE_FLAGS = [("partition", "--partition"), ("account", "--account"), ("qos", "--qos"),
                   ("time", "--time"), ("cpus_per_task", "--cpus-per-task"), ("mem", "--mem"),
                   ("gres", "--gres"), ("constraint", "--constraint")]
_PLACEHOLDER = re.compile(r"\{(run|spec|num_shards|judge_url)\}")


def templates_dir() -> Path:
    """slurm/templates at the top of the repo, or LOCALBENCH_SLURM_TEMPLATES."""
    return Path(os.environ.get("LOCALBENCH_SLURM_TEMPLATES") or REPO_ROOT / "slurm" / "templates")


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        finalize=finalize,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        comment_start_string="{%#",  # bash's ${#array[@]} would open a default {# comment
        comment_end_string="#%}",
    )


@dataclass
class RenderedJob:
    """One rendered script."""

    name: str  # "array" or "merge"
    script: str


def resource_lines(r: JobResources) -> list[Shell]:
    out = []
    if r.multi_node:  # one task per node: the batch script on the first, a Ray node on each (srun)
        out += [Shell(f"--nodes={int(r.nodes or 1)}"), Shell("--ntasks-per-node=1")]
    for fieldname, flag in _RESOURCE_FLAGS:
        v = getattr(r, fieldname)
        if v is not None:
            out.append(sbatch_value(f"{flag}={v}", fieldname))
    return out


def _setup_lines(o: SlurmOptions) -> dict[str, list[Shell]]:
    """The environment set-up, in order: the user's own ``setup`` lines (which may define
    ``module`` for a non-login shell), ``module load`` lines, then conda and venv activation."""
    lines: list[Shell] = []
    if o.conda_env:
        lines.append(Shell('eval "$(conda shell.bash hook)"'))
        lines.append(Shell(f"conda activate {quote_with_vars(o.conda_env)}"))
    if o.venv:
        lines.append(Shell(f"source {quote_with_vars(o.venv.rstrip('/') + '/bin/activate')}"))
    return {"setup": [shell_line(s, f"setup[{i}]") for i, s in enumerate(o.setup)],
            "modules": [Shell(f"module load {quote(m)}") for m in o.modules], "activate": lines}


def _exports(o: SlurmOptions, res: JobResources, run: Path, batch_invariant: bool = False) -> list[tuple[Shell, Shell]]:
    """Environment of every task: offline hub, caches on scratch, threads = the job's own CPUs (``res``:
    the array's resources, or the merge job's), vLLM server logs in the run directory."""
    env: list[tuple[str, Shell]] = []
    if o.offline:
        env += [(k, quote("1")) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")]
    scratch = o.scratch.rstrip("/") if o.scratch else None
    for name, value, sub in (("HF_HOME", o.hf_home, "hf"), ("VLLM_CACHE_ROOT", o.vllm_cache, "vllm"),
                             ("LOCALBENCH_CACHE", o.localbench_cache, "localbench")):
        v = value or (f"{scratch}/{sub}" if scratch else None)
        if v:
            env.append((name, quote_with_vars(v)))
    if res.cpus_per_task:
        env.append(("OMP_NUM_THREADS", quote(res.cpus_per_task)))
    env.append(("PYTHONUNBUFFERED", quote("1")))  # logs appear as they are written
    env.append(("LOCALBENCH_SERVER_LOGS", quote(RunPaths(run).slurm_dir / "servers")))  # not ~/.cache
    if batch_invariant:  # model servers the task starts use vLLM's batch-invariant kernels
        env.append(("VLLM_BATCH_INVARIANT", quote("1")))
    env += [(k, quote_with_vars(v)) for k, v in o.env.items()]
    return [(Shell(k), v) for k, v in env]


def _signal(o: SlurmOptions) -> dict[str, Any]:
    name = o.signal.split(":", 1)[1].split("@", 1)[0] if o.signal else None
    return {"signal": bool(o.signal), "signal_name": Shell(name) if name else Shell("")}


def _ray(res: JobResources, timeout: int) -> dict[str, Any] | None:
    """The Ray cluster of a multi-node job: its nodes, GPUs per node, the srun --gres."""
    if not res.multi_node:
        return None
    # each Ray node's srun step gets the job's CPUs per task: without --cpus-per-task Slurm gives
    # an --overlap step one CPU, and Ray (and vLLM's workers under it) run on that one core
    cpus = Shell(" " + sbatch_value(f"--cpus-per-task={res.cpus_per_task}", "cpus_per_task")) if res.cpus_per_task \
        else Shell("")
    return {"nodes": int(res.nodes or 1), "gpus": res.gpus, "timeout": timeout,
            "gres": sbatch_value(f"--gres={res.gres}", "gres"), "cpus": cpus,
            "num_cpus": Shell(f" --num-cpus {int(res.cpus_per_task)}") if res.cpus_per_task else Shell("")}


def _common(plan: RunPlan, res: JobResources, merge: bool) -> dict[str, Any]:
    """Context shared by both scripts; ``res`` is the resources of the job being rendered."""
    o = plan.options
    ray = _ray(res, o.ray_timeout)
    return {
        **_setup_lines(o),
        "exports": _exports(o, res, plan.layout.run, plan.spec.serving.batch_invariant),
        "workdir": quote(plan.workdir),
        "run": quote(plan.layout.run),
        "state_dir": quote(plan.layout.state),
        "requeue": o.requeue,
        "max_requeues": o.max_requeues,
        "merge": merge,
        "ray": ray,
        "gpus_total": res.gpus * int(res.nodes or 1),
        "serve_timeout": o.serve_timeout,
        **_signal(o),
    }


def _policy_lines(plan: RunPlan, output: str) -> list[Shell]:
    o = plan.options
    lines = [sbatch_value(f"--output={plan.log_dir}/{output}", "log_dir"),
             Shell("--open-mode=append")]  # a requeued task adds to its log
    lines.append(Shell("--requeue" if o.requeue else "--no-requeue"))
    if o.signal:
        lines.append(sbatch_value(f"--signal={o.signal}", "signal"))
    return lines


def serve_line(command: str, model: str, startup_timeout: int = 900) -> Shell:
    """The serve command for one model, as one quoted word for `bash -c` (port from $LB_PORT;
    ``{startup_timeout}``: slurm.serve_timeout, so the server does not give up before the task does)."""
    code = command.replace("{model}", quote(model)).replace("{port}", '"$LB_PORT"') \
        .replace("{startup_timeout}", str(int(startup_timeout)))
    return quote(code)


def render_array(plan: RunPlan, shards: list[int] | None = None) -> RenderedJob:
    """The shard array script, over all shards or only ``shards`` (a resubmission)."""
    o = plan.options
    shards = list(range(plan.num_shards)) if shards is None else sorted(shards)
    if shards == list(range(plan.num_shards)):
        spec = f"0-{plan.num_shards - 1}"
    else:
        spec = ",".join(str(s) for s in shards)
    if o.array_concurrency:
        spec += f"%{o.array_concurrency}"
    sbatch = [sbatch_value(f"--job-name={plan.job_name}", "job_name"), Shell(f"--array={spec}")]
    sbatch += _policy_lines(plan, "%x-%A_%a.out")
    sbatch += resource_lines(o)
    sbatch += [sbatch_value(x, f"extra_sbatch[{i}]") for i, x in enumerate(o.extra_sbatch)]
    layout = plan.layout
    ctx = {
        **_common(plan, o, merge=False),
        "sbatch": sbatch,
        "num_shards": plan.num_shards,
        "specs_dir": quote(layout.shard_spec(0).parent),
        "shards_dir": quote(layout.shards),
        "gpus": o.gpus,
        "agent_gpus": o.agent_gpus,
        "judge_gpus": o.judge_gpus or 0,
        "serve": o.serve,
        "serve_any": o.serve,
        "agent_serve": serve_line(o.serve_command, plan.roles[plan.spec.design.primary_role], o.serve_timeout),
        "judge_serve": serve_line(o.serve_command, plan.roles[plan.spec.design.judge_role], o.serve_timeout),
        "judge_per_shard": o.judge_per_shard,
        # one preset for both, on one set of GPUs: the agent's server judges (a 70B model is not stopped
        # and cold-started again); a judge given GPUs of its own (slurm.judge_gpus) keeps its own server
        "judge_is_agent": (not o.judge_gpus
                           and plan.roles[plan.spec.design.primary_role] == plan.roles[plan.spec.design.judge_role]),
    }
    return RenderedJob("array", _env().get_template("array.sbatch.j2").render(**ctx))


def _remote_judge_wait(url_file: str, timeout: int) -> dict[str, Any]:
    """The merge step before a remote judge (``slurm.judge_url_file``): wait until the judge
    server job has written its URL there and the server answers."""
    code = f"localbench slurm wait-judge {quote(url_file)} --timeout {int(timeout)}"
    return {"name": quote("wait-judge"), "code": quote(code), "serve_judge": False}


def render_merge(plan: RunPlan) -> RenderedJob:
    """The dependent job: merge the shards, then the post-merge commands (the stages after
    simulation by default, ``slurm.after_merge`` when the spec sets them). On several nodes
    (``merge_job.nodes``) the judge step talks to a vLLM server spread over them with Ray."""
    o = plan.options
    cmds = o.after_merge_commands()
    served = plan.merge_judge_model is not None
    values = {"run": quote(plan.layout.run), "spec": quote(plan.layout.spec_file),
              "num_shards": quote(plan.num_shards), "judge_url": '"$LB_JUDGE_URL"'}
    after = []
    for i, c in enumerate(cmds):
        shell_line(c, f"after_merge[{i}]")
        serve_judge = served and command_name(c) == "judge"
        if o.judge_url_file and command_name(c) == "judge" and "--base-url" not in c:
            after.append(_remote_judge_wait(o.judge_url_file, o.judge_wait))
            c += f' --engine openai --base-url "$(cat {quote(o.judge_url_file)})"'
        if serve_judge and "{judge_url}" not in c and "--base-url" not in c:
            c += " --engine openai --base-url {judge_url}"
        code = _PLACEHOLDER.sub(lambda m: values[m.group(1)], c)
        after.append({"name": quote(command_name(c) or f"after-merge-{i + 1}"), "code": quote(code),
                      "serve_judge": serve_judge})
    res = plan.merge
    sbatch = [sbatch_value(f"--job-name={plan.job_name}-merge", "job_name"),
              Shell("--kill-on-invalid-dep=yes")]  # a failed shard cancels this job, not leaves it pending
    sbatch += _policy_lines(plan, "%x-%j.out")
    sbatch += resource_lines(res)
    sbatch += [sbatch_value(x, f"merge_job.extra_sbatch[{i}]") for i, x in enumerate(plan.merge_extra)]
    ctx = {**_common(plan, res, merge=True), "sbatch": sbatch, "after_merge": after, "serve_any": served,
           "judge_serve": serve_line(o.serve_command, plan.merge_judge_model or plan.roles[plan.spec.design.judge_role],
                                      o.serve_timeout)}
    return RenderedJob("merge", _env().get_template("merge.sbatch.j2").render(**ctx))


def render_all(plan: RunPlan) -> list[RenderedJob]:
    return [render_array(plan), render_merge(plan)]
