"""What a submission consists of, before any script is rendered: run directory, shard specs, presets.

Kept apart from rendering so that `--dry-run`, submit and resubmit all agree on the same files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localbench.serving.parallel import Parallel, ParallelError, layout_for
from localbench.serving.presets import Preset, PresetError, load_preset
from localbench.slurm.layout import RunLayout
from localbench.slurm.options import JobResources, SlurmOptions, SlurmOptionsError, command_name, parse_options
from localbench.slurm.shell import UnsafeValue, sbatch_value
from localbench.spec import NO_JUDGE, RunSpec

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
    roles: dict[str, str]  # role (the benchmark's) -> preset name or path the shard processes load
    shard_specs: dict[int, dict[str, Any]] = field(default_factory=dict)
    presets: dict[Path, dict[str, Any]] = field(default_factory=dict)  # derived preset files
    merge: JobResources = field(default_factory=JobResources)  # the merge job's resources
    merge_extra: list[str] = field(default_factory=list)  # and its extra #SBATCH options
    merge_judges: bool = True  # the merge job runs a judge step
    merge_judge_on_gpu: bool = False  # ... with a judge served on GPUs
    merge_judge_model: str | None = None  # multi-node merge job: the preset its Ray cluster serves


def _job_name(run_id: str) -> str:
    return "lb-" + re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)[:60]


def _derived(p: Preset, layout: Parallel, layout_dir: RunLayout, presets: dict[Path, dict[str, Any]]) -> str:
    """The preset's name when ``layout`` is its own; else a copy with the layout's sizes under
    RUN/slurm/presets/ (same name, so the same cache identity and response cache)."""
    if (layout.tp, layout.pp, layout.dp) == (p.tensor_parallel_size, p.pipeline_parallel_size, p.data_parallel_size):
        return p.name
    data = p.model_dump(mode="json", exclude={"file"})
    data.update(tensor_parallel_size=layout.tp, pipeline_parallel_size=layout.pp, data_parallel_size=layout.dp)
    path = layout_dir.presets / f"{p.name}{layout.suffix()}.yaml"
    presets[path] = data
    return str(path)


def _tp_preset(name: str, gpus: int, layout: RunLayout, presets: dict[Path, dict[str, Any]], where: str = "spec",
               field: str = "gres") -> str:
    """The preset to load for a model given ``gpus`` GPUs of one node: tensor parallel as the
    preset needs, data-parallel copies on the rest (``serving.parallel``); refused with the reason
    when the GPUs cannot be split so."""
    p = load_preset(name)
    if gpus <= 1:  # no GPUs to spread over (or a role this job does not run): the preset as it is
        return name
    try:
        par = layout_for(p, max(1, gpus))
    except ParallelError as e:
        raise SlurmOptionsError(f"{where}: field 'slurm.{field}': {e}") from e
    return _derived(p, par, layout, presets)


def _multi_node_preset(name: str, per_node: int, nodes: int, layout: RunLayout,
                       presets: dict[Path, dict[str, Any]], where: str, field: str) -> str:
    """The preset a Ray cluster of ``nodes`` x ``per_node`` GPUs serves: tensor parallel within a
    node, pipeline parallel across nodes (or the preset's own sizes when they use exactly those
    GPUs); refused when the GPUs are too few or tensor parallelism cannot divide the heads."""
    p = load_preset(name)
    try:
        par = layout_for(p, per_node, nodes)
    except ParallelError as e:
        raise SlurmOptionsError(f"{where}: field 'slurm.{field}': {e}") from e
    return _derived(p, par, layout, presets)


def _judge_on_gpu(spec: RunSpec) -> bool:
    try:
        return load_preset(spec.judge_model).needs_gpu
    except PresetError:
        return False  # an unknown preset fails where it is loaded, with its own message


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
    design = spec.design
    primary, judge_role = design.primary_role, design.judge_role
    from localbench.runtime.plan import role_presets

    models = role_presets(spec)  # each role's preset, looked up once (runtime.plan)
    if opts.serve:  # one server serves the primary role's model, so every simulation role must use it
        for role in design.simulation_roles:
            if spec.models.get(role) and models[role] != models[primary]:
                raise SlurmOptionsError(
                    f"{where}: field 'slurm.serve': one server serves the {primary} model, but models.{role} "
                    f"({spec.models[role]}) differs from models.{primary} ({models[primary]})")

    presets: dict[Path, dict[str, Any]] = {}
    if opts.multi_node:
        if not opts.serve:
            raise SlurmOptionsError(f"{where}: field 'slurm.nodes': a task on {opts.nodes} nodes serves its model "
                                    "with vLLM across them (Ray); set slurm.serve: true")
        if opts.judge_gpus:
            raise SlurmOptionsError(f"{where}: field 'slurm.judge_gpus': a multi-node task serves one model at a "
                                    "time on all its GPUs; leave judge_gpus out")
        roles = {r: _multi_node_preset(models[r], opts.gpus, opts.nodes or 1, layout, presets, where, "nodes")
                 for r in design.role_names}
    else:
        agent_gpus = opts.agent_gpus if opts.tensor_parallel else 1
        judge_gpus = (opts.judge_gpus or opts.gpus) if opts.tensor_parallel else 1
        roles = {r: models[r] if models[r] == NO_JUDGE else  # judging off: no preset to load
                 _tp_preset(models[r], judge_gpus if r == judge_role else agent_gpus, layout, presets,
                            where, "judge_gpus" if r == judge_role and opts.judge_gpus else "gres")
                 for r in design.role_names}
    # what each shard's spec names: the primary role always; another role where the spec names it
    # (else it follows its default), the judge also where its tensor-parallel copy differs
    shard_models = {r: roles[r] for r in design.role_names
                    if r == primary or spec.models.get(r) or (r == judge_role and roles[r] != roles[primary])}
    plan = RunPlan(spec=base, options=opts, layout=layout, workdir=wd, num_shards=n, job_name=job_name,
                   log_dir=log_dir, roles=roles, presets=presets)
    _plan_merge_job(plan, spec, where)
    for i in range(n):
        d = base.model_dump(mode="json")
        d.update(out=str(layout.shards), run_id=str(i), shard=i, num_shards=n, slurm={},
                 models=shard_models)
        plan.shard_specs[i] = d
    return plan


def _plan_merge_job(plan: RunPlan, spec: RunSpec, where: str) -> None:
    """The merge job's resources (its own: see SlurmOptions.merge_resources), and on several nodes
    the judge preset its Ray cluster serves."""
    opts = plan.options
    plan.merge_judges = any(command_name(c) == "judge" for c in opts.after_merge_commands())
    multi = (opts.merge_job.nodes or 1) > 1
    remote = opts.judge_url_file is not None  # judged at another job's server: no GPU here
    plan.merge_judge_on_gpu = plan.merge_judges and not remote and (multi or _judge_on_gpu(spec))
    plan.merge, plan.merge_extra = opts.merge_resources(plan.merge_judge_on_gpu, plan.merge_judges)
    opts.check_time_limits(where, plan.merge)
    if multi:
        if remote:
            raise SlurmOptionsError(f"{where}: field 'slurm.merge_job.nodes': the judge is served by another job "
                                    "(slurm.judge_url_file), so the merge job serves no model across nodes")
        if not plan.merge_judges:
            raise SlurmOptionsError(f"{where}: field 'slurm.merge_job.nodes': the merge job runs no judge step "
                                    "(judge_per_shard or after_merge), so it has no model to serve across nodes")
        if not plan.merge.gpus:
            raise SlurmOptionsError(f"{where}: field 'slurm.merge_job.nodes': a merge job on {plan.merge.nodes} nodes "
                                    "serves the judge across their GPUs; set slurm.merge_job.gres (GPUs per node)")
        plan.merge_judge_model = _multi_node_preset(spec.judge_model, plan.merge.gpus, plan.merge.nodes or 1,
                                                    plan.layout, plan.presets, where, "merge_job.nodes")
