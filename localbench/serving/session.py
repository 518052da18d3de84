"""Open a StructuredClient for a preset under a run's serving options (engine, cache, retries).

One place decides how a run talks to its models, for simulation and judging alike. It is handed
what it needs (a preset, the serving options, a server URL, a cache), never a whole run spec:
which role a model plays is the caller's business.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localbench.errors import UserError
from localbench.runlog import RunPaths
from localbench.serving.cache import ResponseCache
from localbench.serving.client import StructuredClient
from localbench.serving.engines import open_backend, pick_engine
from localbench.serving.presets import Preset, load_preset
from localbench.spec import EngineOptions


def open_cache(path: str | Path | None, run_dir: Path, no_cache: bool = False) -> ResponseCache | None:
    """A run's response cache: ``path``, else <run dir>/cache.sqlite; None with ``no_cache``."""
    if no_cache:
        return None
    return ResponseCache(Path(path) if path else RunPaths(run_dir).cache_path)


def engine_for(preset: Preset, serving: EngineOptions, base_url: str | None) -> str:
    """The engine that serves ``preset`` under these options: ``pick_engine``'s rule, then batch
    invariance's (an engine without it refused now, not after the simulations)."""
    engine = pick_engine(preset, serving.engine, base_url)
    return batch_invariant_engine(engine, serving.engine) if serving.batch_invariant else engine


def check_models_here(models: Mapping[str, str], serving: EngineOptions,
                      urls: Mapping[str, str | None]) -> dict[str, str]:
    """Refuse at once (UserError) a role whose preset is unknown or cannot run on this machine
    (needs a GPU, weights not fetched), rather than after hours of the stages before it. A model
    served elsewhere (the openai engine) needs nothing here. ``models``: role -> preset;
    ``urls``: role -> the server it is reached at, if any. Returns role -> the engine chosen for it,
    for the clients to open it on (``open_client``'s ``engine``)."""
    from localbench.serving.availability import check

    presets = {role: load_preset(name) for role, name in models.items()}
    engines = {role: engine_for(p, serving, urls.get(role)) for role, p in presets.items()}
    # presets this process opens in vLLM on its GPU -> their memory share
    plan_gpu_memory({p.name: p.gpu_memory_utilization for role, p in presets.items() if engines[role] == "vllm"})
    for role, name in models.items():
        preset, engine = presets[role], engines[role]
        if engine == "openai":
            continue
        found = check(preset)
        if not found.usable:
            raise UserError(f"{role.replace('_', '-')} model '{name}' cannot run on this machine: {found.reason} "
                            "(`localbench models` lists the presets that can; --base-url uses a server instead)")
    return engines


# Each in-process vLLM engine's share of the one GPU they share (set by check_models_here for the
# run's models, read by open_client): two presets asking 0.85 each would fail vLLM's free-memory
# check at the second start; the Slurm path refuses two servers on one GPU instead.
GPU_MEMORY_SHARES: dict[str, float] = {}


def detect_device():  # a function, so tests put a simulated GPU here
    return _detect_once()


@functools.cache
def _detect_once():
    from localbench.serving.device import detect

    return detect()


def concurrency(serving: EngineOptions, engines: int = 1):
    """How many simulations, requests and judge calls run at once (``device.concurrency_limits``):
    the spec's ``max_concurrency`` when set (no device asked), else from the device here;
    ``engines``: distinct models the simulations share it among."""
    from localbench.serving.device import CPU, concurrency_limits

    if serving.max_concurrency:
        return concurrency_limits(CPU, serving.max_concurrency)
    return concurrency_limits(detect_device(), None, engines)


def plan_gpu_memory(requested: dict[str, float]) -> dict[str, float]:
    """Split the GPU between the presets that open in-process vLLM engines here (``device.memory_shares``);
    a split too thin to run is a UserError now, before any engine starts."""
    from localbench.serving.device import MemorySplitError, memory_shares

    GPU_MEMORY_SHARES.clear()
    if len(requested) < 2:
        return {}
    device = detect_device()
    try:
        shares = memory_shares(requested, device)
    except MemorySplitError as e:
        raise UserError(f"field 'models': {e}") from e
    if shares != requested:
        GPU_MEMORY_SHARES.update(shares)
    return dict(GPU_MEMORY_SHARES)


def batch_invariant_engine(engine: str, requested: str) -> str:
    """The engine a ``serving.batch_invariant`` run uses: vllm only where its batch-invariant kernels
    run (``auto`` falls back to hf elsewhere; an explicit ``vllm`` is refused, with the reason)."""
    if engine != "vllm":
        return engine
    from localbench.serving.vllm_engine import batch_invariance_support

    ok, why = batch_invariance_support()
    if ok:
        return engine
    if requested == "auto":
        return "hf"
    raise UserError(f"field 'serving.batch_invariant': {why}; use --engine hf (one row per forward pass), or "
                    "leave serving.batch_invariant off")


def open_client(preset_name: str, serving: EngineOptions, base_url: str | None, cache: ResponseCache | None,
                role: str = "", engine: str | None = None) -> StructuredClient:
    """A client for ``preset_name`` on ``engine``, else the one the serving options pick (``role``
    names it in errors)."""
    preset = load_preset(preset_name)
    engine = engine or engine_for(preset, serving, base_url)
    opts: dict[str, Any]
    if engine == "openai":
        if not base_url:
            raise UserError(f"serving.base_url is required with the openai engine (role {role or preset_name})")
        opts = {"base_url": base_url, "max_concurrency": concurrency(serving).requests,
                "timeout": serving.request_timeout_s, "first_byte_timeout": serving.first_byte_timeout_s}
    elif engine == "hf":
        opts = {"grammar": serving.grammar, "max_batch_size": serving.max_batch_size,
                "prefix_cache_gb": serving.prefix_cache_gb}
        if serving.batch_invariant:  # each row alone: padding, batch shape and reused KV cannot change it
            opts.update(max_batch_size=1, prefix_cache_gb=0.0)
    else:
        opts = {}
        if preset.name in GPU_MEMORY_SHARES:  # another in-process engine shares this GPU
            opts["gpu_memory_utilization"] = GPU_MEMORY_SHARES[preset.name]
        if serving.batch_invariant:
            import os

            from localbench.serving.vllm_engine import BATCH_INVARIANT_ENV

            os.environ[BATCH_INVARIANT_ENV] = "1"  # read by vLLM (and its EngineCore process) as it starts
    backend = open_backend(preset, engine, **opts)
    return StructuredClient(backend, cache=cache, max_retries=serving.max_retries)
