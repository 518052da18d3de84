"""`localbench models`: list presets and say which are usable on this machine, and why not;
with --check-fit, whether each preset's weights and KV cache fit given GPUs (localbench.serving.fit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer


def fit_rows(gpu_name: str | None, gpus: int | None, spec_file: Path | None, strict: bool = True) -> list[dict]:
    """One row per preset (or, with a spec, per role of the spec and the GPUs its Slurm job gives it).
    ``strict`` False: a job whose GPU kind is unknown is left out instead of refused."""
    from localbench.errors import UserError
    from localbench.serving.fit import check_fit, gpu
    from localbench.serving.presets import list_presets

    rows: list[dict] = []
    if spec_file is None:
        if not gpu_name:
            raise UserError("--check-fit needs --gpu (e.g. --gpu H100-80GB), or --spec with a slurm.gres that names "
                            "the GPU type (gpu:h100:4)")
        on = gpu(gpu_name)
        for p in list_presets():
            rows.append(_row(p.name, None, check_fit(p, on, gpus), p.needs_gpu, gpus or p.tensor_parallel_size
                             * p.pipeline_parallel_size, on.name))
        return rows
    from localbench.slurm.plan import make_plan
    from localbench.spec import load_spec

    spec = load_spec(spec_file)
    return plan_fit_rows(make_plan(spec, str(spec_file)), gpu_name, strict, spec_file)


def plan_fit_rows(plan, gpu_name: str | None, strict: bool, where) -> list[dict]:
    """``fit_rows`` of a spec's Slurm plan (``plan.spec``), per role and job; ``where`` names the spec in errors."""
    from localbench.errors import UserError
    from localbench.serving.fit import check_fit, gpu, gpu_of_gres
    from localbench.serving.presets import Preset, load_preset
    from localbench.spec import NO_JUDGE

    rows: list[dict] = []
    spec_file = where
    spec = plan.spec
    design = spec.design
    in_shards = set(design.simulation_roles) | ({design.judge_role} if plan.options.judge_per_shard else set())
    jobs = [("shard task", plan.options, {r: m for r, m in plan.roles.items() if r in in_shards})]
    if plan.merge_judges:
        role = spec.design.judge_role
        jobs.append(("merge job", plan.merge, {role: plan.merge_judge_model or spec.judge_model}))
    for job, res, roles in jobs:
        if gpu_name:
            on = gpu(gpu_name)
        else:
            on = gpu_of_gres(res.gres)
            if on is None and res.gpus and not strict:
                continue
            if on is None and res.gpus:
                raise UserError(f"{spec_file}: field 'slurm.gres' ({res.gres!r}) does not say which GPU (or names one "
                                "with several memory sizes); give --gpu, e.g. --gpu A100-80GB")
        for role, name in roles.items():
            if name == NO_JUDGE:  # judging off: no model
                continue
            derived = plan.presets.get(Path(name))  # a tensor/pipeline parallel copy submit would write
            p = Preset.model_validate(derived) if derived is not None else load_preset(name)
            if not res.gpus or on is None:
                rows.append(_row(p.name, f"{role} ({job})", None, p.needs_gpu, 0, "CPU"))
                continue
            rows.append(_row(p.name, f"{role} ({job})", check_fit(p, on), p.needs_gpu,
                             p.tensor_parallel_size * p.pipeline_parallel_size, on.name))
    return rows


def _row(name, role, fit, needs_gpu, gpus, gpu_name) -> dict:
    d = {"preset": name, "role": role, "gpu": gpu_name, "gpus": gpus}
    if fit is None:
        d.update(fits=None, line="no GPU: not checked" if gpu_name == "CPU" else
                 "size unknown: add `size:` to the preset (params_b, layers, kv_heads, head_dim)")
    else:
        d.update(fits=fit.fits, line=fit.line(), weights_gib=round(fit.weights_gib, 2),
                 kv_per_seq_gib=round(fit.kv_per_seq_gib, 2), budget_gib=round(fit.budget_gib, 2),
                 sequences=fit.sequences, tp=fit.tp, pp=fit.pp)
    return d


def register(app: typer.Typer) -> None:
    @app.command("models")
    def models(as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
               check_fit: bool = typer.Option(False, "--check-fit",
                                              help="say whether each preset's weights + KV cache fit the GPUs"),
               gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU kind for --check-fit, e.g. H100-80GB, "
                                                 "A100-40GB, L40S-48GB, or NAME-<N>GB"),
               gpus: Optional[int] = typer.Option(None, "--gpus", min=1,
                                                  help="GPUs per model (tensor parallel); default: the preset's"),
               spec_file: Optional[Path] = typer.Option(None, "--spec", help="check the models of this spec with "
                                                        "the GPUs its slurm section gives each job")) -> None:
        """List model presets (serving/*.yaml) and whether each can run here; --check-fit: whether
        each fits given GPUs (weights + KV cache for one full-length sequence)."""
        from rich.console import Console
        from rich.table import Table

        if check_fit or spec_file is not None:
            rows = fit_rows(gpu, gpus, spec_file)
            if as_json:
                typer.echo(json.dumps(rows, indent=2))
                return
            for r in rows:
                text = r["line"] if r["fits"] is not None else f"{r['preset']}: {r['line']}"
                typer.echo(f"{r['role']}: {text}" if r["role"] else text)
            return

        from localbench.serving.availability import check
        from localbench.serving.engines import cuda_available
        from localbench.serving.presets import list_presets

        gpu_here = cuda_available()
        rows = []
        for p in list_presets():
            a = check(p, has_cuda=gpu_here)
            src = p.source.repo or p.source.package or p.source.path or p.source.kind
            rows.append({"name": p.name, "source": src, "dtype": p.dtype, "max_model_len": p.max_model_len,
                         "needs_gpu": p.needs_gpu, "usable": a.usable, "reason": a.reason})
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        t = Table(title=f"model presets (GPU: {'yes' if gpu_here else 'no'})")
        for col in ("preset", "source", "dtype", "context", "usable here"):
            t.add_column(col)
        for r in rows:
            status = "[green]yes[/]" if r["usable"] else f"[red]no[/]: {r['reason']}"
            t.add_row(r["name"], str(r["source"]), r["dtype"], str(r["max_model_len"]), status)
        Console().print(t)


def fit_problems(plan, where) -> list[str]:
    """The roles of a spec whose model does not fit the GPUs its Slurm jobs ask for (where the
    gres names the GPU kind); what `localbench slurm submit` refuses before submitting anything.
    ``plan``: the spec's Slurm plan, made once by the command."""
    return [f"{r['role']}: {r['line']}" for r in plan_fit_rows(plan, None, False, where) if r["fits"] is False]
