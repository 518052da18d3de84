"""What a submission consists of, before any script is rendered: run directory, shard specs, presets.

Kept apart from rendering so that `--dry-run`, submit and resubmit all agree on the same files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localbench.serving.presets import load_preset
from localbench.slurm.layout import RunLayout
from localbench.slurm.options import SlurmOptions, SlurmOptionsError, parse_options
from localbench.slurm.shell import UnsafeValue, sbatch_value
from localbench.spec import RunSpec

SHARD_FIELDS = ("shard", "num_shards")


@dataclass
class RunPlan:
    """A spec resolved into the files and names one Slurm run uses."""

    spec: RunSpec  # the user's spec with the shard fields cleared (what RUN/spec.yaml records)
    options: SlurmOptions
    layout: RunLayout
    workdir: Path
    num_shards: int
    job_name: str
    log_dir: str  # absolute: a relative slurm.log_dir is taken from the workdir
    roles: dict[str, str]  # role -> preset name or path the shard processes load
    shard_specs: dict[int, dict[str, Any]] = field(default_factory=dict)
    presets: dict[Path, dict[str, Any]] = field(default_factory=dict)  # derived preset files


def _job_name(run_id: str) -> str:
    return "lb-" + re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)[:60]


def _tp_preset(name: str, gpus: int, layout: RunLayout, presets: dict[Path, dict[str, Any]]) -> str:
    """The preset to load for a model given ``gpus`` GPUs: a copy with tensor_parallel_size = gpus.

    The copy keeps the preset's name, so its cache identity (and so the response cache) is the
    same as the original's.
    """
    p = load_preset(name)
    if gpus <= 1 or p.tensor_parallel_size == gpus:
        return name
    data = p.model_dump(mode="json", exclude={"file"})
    data["tensor_parallel_size"] = gpus
    path = layout.presets / f"{p.name}-tp{gpus}.yaml"
    presets[path] = data
    return str(path)


def make_plan(spec: RunSpec, where: str = "spec", workdir: str | Path | None = None,
              num_shards: int | None = None) -> RunPlan:
    """Resolve a spec for Slurm; bad options raise SlurmOptionsError naming the field."""
    opts = parse_options(spec.slurm, where, num_shards=num_shards)
    wd = Path(os.path.abspath(opts.workdir or workdir or os.getcwd()))
    base = spec.model_copy(update={"shard": None, "num_shards": None})
    run_dir = Path(base.out) / base.resolved_run_id
    layout = RunLayout(run_dir if run_dir.is_absolute() else wd / run_dir)
    n = opts.num_shards or spec.num_shards or 1
    job_name = opts.job_name or _job_name(base.resolved_run_id)
    # The jobs run in the workdir (sbatch is called there), so a relative log_dir names a directory
    # there: store it absolute, so that submit creates it there and status finds it from anywhere.
    log_dir = opts.log_dir or str(layout.default_log_dir)
    if not os.path.isabs(log_dir):
        log_dir = os.path.abspath(os.path.join(wd, log_dir))
    try:
        sbatch_value(log_dir, "log_dir")
    except UnsafeValue as e:
        what = (f"the default {log_dir!r} (under the run directory)" if opts.log_dir is None else
                f"{opts.log_dir!r} is relative, so it is taken from the workdir: {log_dir!r}, which")
        raise SlurmOptionsError(
            f"{where}: field 'slurm.log_dir': {what} cannot go on an #SBATCH line; set slurm.log_dir to "
            f"a plain absolute path. ({e})"
        ) from e
    if opts.serve and spec.models.user_sim and spec.models.user_sim != spec.models.agent:
        raise SlurmOptionsError(
            f"{where}: field 'slurm.serve': one server serves the agent model, but models.user_sim "
            f"({spec.models.user_sim}) differs from models.agent ({spec.models.agent})"
        )

    presets: dict[Path, dict[str, Any]] = {}
    agent_gpus = opts.agent_gpus if opts.tensor_parallel else 1
    judge_gpus = (opts.judge_gpus or opts.gpus) if opts.tensor_parallel else 1
    roles = {
        "agent": _tp_preset(spec.models.agent, agent_gpus, layout, presets),
        "user_sim": _tp_preset(spec.models.for_role("user_sim"), agent_gpus, layout, presets),
        "judge": _tp_preset(spec.models.for_role("judge"), judge_gpus, layout, presets),
    }
    shard_models = {"agent": roles["agent"],
                    "user_sim": roles["user_sim"] if spec.models.user_sim else None,
                    "judge": roles["judge"] if spec.models.judge or roles["judge"] != roles["agent"] else None}
    plan = RunPlan(spec=base, options=opts, layout=layout, workdir=wd, num_shards=n, job_name=job_name,
                   log_dir=log_dir, roles=roles, presets=presets)
    for i in range(n):
        d = base.model_dump(mode="json")
        d.update(out=str(layout.shards), run_id=str(i), shard=i, num_shards=n, slurm={},
                 models={k: v for k, v in shard_models.items() if v is not None})
        plan.shard_specs[i] = d
    return plan
