"""Open a StructuredClient for a preset under a run's serving options (engine, cache, retries).

One place decides how a run talks to its models, for simulation and judging alike. It is handed
what it needs (a preset, the serving options, a server URL, a cache), never a whole run spec:
which role a model plays is the caller's business.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class RoleServing:
    """How one role's model is served in a run (a run plan's role entry, ``runtime.plan``): the
    engine chosen for it, for an in-process vLLM engine that shares its GPU with others open at the
    same time its memory share (None: the preset's own), the preset as loaded when the run was
    planned, and the server it is reached at (the openai engine)."""

    engine: str
    gpu_memory_utilization: float | None = None
    preset: Preset | None = None
    url: str | None = None


def check_models_here(models: Mapping[str, str], serving: EngineOptions, urls: Mapping[str, str | None],
                      together: Sequence[Collection[str]] | None = None) -> dict[str, RoleServing]:
    """Refuse at once (UserError) a role whose preset is unknown or cannot run on this machine
    (needs a GPU, weights not fetched), rather than after hours of the stages before it. A model
    served elsewhere (the openai engine) needs nothing here. ``models``: role -> preset;
    ``urls``: role -> the server it is reached at, if any; ``together``: the groups of roles whose
    engines are open at the same time (default: all of them), among which alone the GPU is split.
    Returns role -> how it is served, for the clients to open it on (``open_client``)."""
    from localbench.serving.availability import check

    presets = {role: load_preset(name) for role, name in models.items()}
    engines = {role: engine_for(p, serving, urls.get(role)) for role, p in presets.items()}
    shares = gpu_shares(presets, engines, together if together is not None else [list(models)])
    for role, name in models.items():
        preset, engine = presets[role], engines[role]
        if engine == "openai":
            continue
        found = check(preset)
        if not found.usable:
            raise UserError(f"{role.replace('_', '-')} model '{name}' cannot run on this machine: {found.reason} "
                            "(`localbench models` lists the presets that can; --base-url uses a server instead)")
    return {role: RoleServing(engines[role], shares.get(role), presets[role], urls.get(role)) for role in models}


def gpu_shares(presets: Mapping[str, Preset], engines: Mapping[str, str],
               together: Sequence[Collection[str]]) -> dict[str, float]:
    """role -> memory share, for the in-process vLLM engines that share the GPU with another open at
    the same time (``device.memory_shares``; roles played by one preset are one engine). An engine
    that opens alone (a judge whose stage starts after the simulations' engines closed) keeps its
    preset's share and is not listed. A split too thin to run is a UserError now, before any
    engine starts; two presets asking 0.85 each would otherwise fail vLLM's free-memory check at
    the second start."""
    from localbench.serving.device import MemorySplitError, memory_shares

    out: dict[str, float] = {}
    for group in together:
        local = [r for r in group if r in presets and engines.get(r) == "vllm"]
        requested = {presets[r].name: presets[r].gpu_memory_utilization for r in local}
        if len(requested) < 2:
            continue
        try:
            split = memory_shares(requested, detect_device())
        except MemorySplitError as e:
            raise UserError(f"field 'models': {e}") from e
        out.update({r: split[presets[r].name] for r in local if split[presets[r].name] != requested[presets[r].name]})
    return out


def detect_device():  # a function, so tests put a simulated GPU here
    return _detect_once()


@functools.cache
def _detect_once():
    from localbench.serving.device import detect

    return detect()


def concurrency(serving: EngineOptions, engines: int = 1, served: Sequence[int] = ()):
    """How many simulations, requests and judge calls run at once (``device.concurrency_limits``):
    the spec's ``max_concurrency`` when set (no device asked), else from the device here;
    ``engines``: distinct models the simulations share it among; ``served``: the in-flight limits
    of those that are servers (each read from its server, ``server_card``). Where every engine is a
    server, the device here does not matter: the largest server's limit bounds all three; beside
    in-process engines, it raises the device's where it is larger."""
    from localbench.serving.device import CPU, Concurrency, concurrency_limits

    if serving.max_concurrency:
        return concurrency_limits(CPU, serving.max_concurrency)
    if served:
        n = max(served)
        if len(served) >= engines:
            return Concurrency(n, n, n, "server")
        local = concurrency_limits(detect_device(), None, engines - len(served))
        return Concurrency(max(n, local.simulations), max(n, local.requests), max(n, local.judge),
                           f"server and {local.source}")
    return concurrency_limits(detect_device(), None, engines)


def served_limits(backends: Iterable[Any]) -> list[int]:
    """The in-flight limits of the served engines among ``backends`` (``concurrency``'s ``served``)."""
    return [b.max_concurrency for b in backends if getattr(b, "engine", None) == "openai"]


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


def api_key(serving: EngineOptions) -> str | None:
    """The servers' API key, from the environment variable ``serving.api_key_env`` names (None: no
    key); a variable named but unset is a UserError naming it, not a run of 401s."""
    if not serving.api_key_env:
        return None
    import os

    key = os.environ.get(serving.api_key_env)
    if not key:
        raise UserError(f"field 'serving.api_key_env': the environment variable {serving.api_key_env} is not set "
                        "(it should hold the API key the server was started with)")
    return key


HF_BATCH = 32
"""The hf engine's forward-pass batch where ``serving.max_batch_size`` is unset."""


def open_client(preset_name: str | RoleServing, serving: EngineOptions, base_url: str | None = None,
                cache: ResponseCache | None = None, role: str = "", engine: str | None = None,
                gpu_memory_utilization: float | None = None) -> StructuredClient:
    """A client for ``preset_name`` on ``engine``, else the one the serving options pick (``role``
    names it in errors); ``gpu_memory_utilization``: an in-process vLLM engine's share of a GPU it
    shares (``check_models_here``), else the preset's own. Given a run plan's role entry
    (``RoleServing``) instead of a name, it opens that entry's preset as loaded, on its engine, URL
    and share, and looks nothing up again (``base_url``, ``engine`` and the share are then unused)."""
    if isinstance(preset_name, RoleServing):
        planned = preset_name
        if planned.preset is None:
            raise ValueError(f"role {role}: a run plan's entry carries the preset it loaded (check_models_here)")
        preset = planned.preset
        engine, base_url, gpu_memory_utilization = planned.engine, planned.url, planned.gpu_memory_utilization
    else:
        preset = load_preset(preset_name)
        engine = engine or engine_for(preset, serving, base_url)
    opts: dict[str, Any]
    if engine == "openai":
        if not base_url:
            raise UserError(f"serving.base_url is required with the openai engine (role {role or preset.name})")
        # the spec's bound, else the server's own (its card), never this machine's
        opts = {"base_url": base_url, "max_concurrency": serving.max_concurrency, "api_key": api_key(serving),
                "timeout": serving.request_timeout_s, "first_byte_timeout": serving.first_byte_timeout_s}
    elif engine == "hf":
        opts = {"grammar": serving.grammar, "max_batch_size": serving.max_batch_size or HF_BATCH,
                "prefix_cache_gb": serving.prefix_cache_gb}
        if serving.batch_invariant:  # each row alone: padding, batch shape and reused KV cannot change it
            opts.update(max_batch_size=1, prefix_cache_gb=0.0)
    else:
        opts = {"max_batch_size": serving.max_batch_size}  # vLLM's max_num_seqs, where the spec caps it
        if gpu_memory_utilization is not None:  # another in-process engine shares this GPU
            opts["gpu_memory_utilization"] = gpu_memory_utilization
        if serving.batch_invariant:
            import os

            from localbench.serving.vllm_engine import BATCH_INVARIANT_ENV

            os.environ[BATCH_INVARIANT_ENV] = "1"  # read by vLLM (and its EngineCore process) as it starts
    backend = open_backend(preset, engine, **opts)
    return StructuredClient(backend, cache=cache, max_retries=serving.max_retries)
