"""Open a StructuredClient for a preset under a RunSpec's serving options (engine, cache, retries).

One place decides how a run talks to its models, for simulation and judging alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localbench.serving.cache import ResponseCache
from localbench.serving.client import StructuredClient
from localbench.serving.engines import open_backend, pick_engine
from localbench.serving.presets import load_preset
from localbench.spec import RunSpec, SpecError


def cache_for(spec: RunSpec, run_dir: Path) -> ResponseCache | None:
    """The run's response cache: spec.cache, else <run dir>/cache.sqlite; None with no_cache."""
    if spec.no_cache:
        return None
    return ResponseCache(Path(spec.cache) if spec.cache else Path(run_dir) / "cache.sqlite")


def check_models_here(spec: RunSpec, roles: tuple[str, ...] = ("agent", "user_sim", "judge")) -> None:
    """Refuse at once (UserError) a role whose preset is unknown or cannot run on this machine
    (needs a GPU, weights not fetched), rather than after hours of the stages before it. A model
    served elsewhere (the openai engine) needs nothing here."""
    from localbench.errors import UserError
    from localbench.serving.availability import check

    for role in roles:
        name = spec.models.for_role(role)
        preset = load_preset(name)
        if pick_engine(preset, spec.serving.engine, _role_url(spec, role)) == "openai":
            continue
        found = check(preset)
        if not found.usable:
            raise UserError(f"{role.replace('_', '-')} model '{name}' cannot run on this machine: {found.reason} "
                            "(`localbench models` lists the presets that can; --base-url uses a server instead)")


def _role_url(spec: RunSpec, role: str) -> str | None:
    s = spec.serving
    return (s.judge_base_url or s.base_url) if role == "judge" else s.base_url


def open_client(spec: RunSpec, role: str, run_dir: Path, cache: ResponseCache | None = None) -> StructuredClient:
    """A client for the preset that plays ``role`` (agent, user_sim, judge)."""
    s = spec.serving
    preset = load_preset(spec.models.for_role(role))
    url = _role_url(spec, role)
    engine = pick_engine(preset, s.engine, url)
    opts: dict[str, Any]
    if engine == "openai":
        if not url:
            raise SpecError(f"serving.base_url is required with the openai engine (role {role})")
        opts = {"base_url": url, "max_concurrency": s.max_concurrency}
    elif engine == "hf":
        opts = {"grammar": s.grammar, "max_batch_size": s.max_batch_size, "prefix_cache_gb": s.prefix_cache_gb}
    else:
        opts = {}
    backend = open_backend(preset, engine, **opts)
    return StructuredClient(backend, cache=cache if cache is not None else cache_for(spec, run_dir),
                            max_retries=s.max_retries)
