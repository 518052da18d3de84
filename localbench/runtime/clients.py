"""The clients a run talks to, by role: which preset plays a role comes from the run's spec (and
its benchmark's design), how it is served from ``serving.session``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localbench.serving.cache import ResponseCache
from localbench.serving.client import StructuredClient
from localbench.serving.session import RoleServing, check_models_here, open_cache, open_client
from localbench.spec import RunSpec


def run_cache(spec: RunSpec, run_dir: str | Path) -> ResponseCache | None:
    """The run's response cache: spec.cache, else <run dir>/cache.sqlite; None with no_cache."""
    return open_cache(spec.cache, Path(run_dir), spec.no_cache)


Engines = Mapping[tuple[str, str], RoleServing]
"""(role, preset) -> how ``check_models`` chose to serve it (engine, memory share): the serving plan
a command makes once and its clients open on."""


def client_for(spec: RunSpec, role: str, run_dir: str | Path, cache: ResponseCache | None = None,
               engines: Engines | None = None) -> StructuredClient:
    """A client for the preset that plays ``role`` (one of the design's roles), served as
    ``engines`` planned it (else chosen now)."""
    preset = spec.model_for(role)
    plan = (engines or {}).get((role, preset))
    return open_client(preset, spec.serving, spec.url_for(role),
                       cache if cache is not None else run_cache(spec, run_dir), role=role,
                       engine=plan.engine if plan else None,
                       gpu_memory_utilization=plan.gpu_memory_utilization if plan else None)


def check_models(spec: RunSpec, roles: Iterable[str] | None = None) -> dict[tuple[str, str], RoleServing]:
    """Refuse at once a role (default: every role of the design) whose model cannot run here;
    returns how each is served (``Engines``). The GPU is split only among engines open at the same
    time (``open_together``)."""
    names = list(roles) if roles is not None else list(spec.design.role_names)
    models = {r: spec.model_for(r) for r in names}
    chosen = check_models_here(models, spec.serving, {r: spec.url_for(r) for r in names}, open_together(spec, names))
    return {(r, models[r]): e for r, e in chosen.items()}


def open_together(spec: RunSpec, roles: Iterable[str]) -> list[list[str]]:
    """The groups of ``roles`` whose engines are open at the same time: the simulation roles (one
    engine per distinct preset, all open while simulations run), then every other role alone. The
    judge's stage opens its engine after the simulations' engines have closed (a judge pipelined
    into the simulations is the agent's own engine, not another), so it never shares the GPU."""
    roles = list(roles)
    simulating = [r for r in roles if r in spec.design.simulation_roles]
    return [simulating, *[[r] for r in roles if r not in simulating]]


@dataclass
class RoleClients:
    """The clients of a simulation, by role. Roles played by the same preset share one client (one
    backend, one batch); ``aliases`` name call roles played by another role's model (a simulator
    may speak as a role the spec does not list, played by one it does)."""

    by_role: dict[str, StructuredClient]
    aliases: Mapping[str, str] = field(default_factory=dict)
    cache: ResponseCache | None = None

    @classmethod
    def open(cls, spec: RunSpec, roles: Iterable[str], run_dir: str | Path,
             aliases: Mapping[str, str] | None = None,
             scripted: Callable[[str], Any | None] | None = None, engines: Engines | None = None) -> "RoleClients":
        """``scripted``: preset -> a backend that plays it with no model, or None (the benchmark's
        ``scripted_backend``, handed down by the pipeline); such a client is uncached (its replies
        follow the simulation's state, not the prompt alone) and never retried."""
        cache = run_cache(spec, run_dir)
        by_preset: dict[str, StructuredClient] = {}
        by_role: dict[str, StructuredClient] = {}
        try:
            for role in roles:
                preset = spec.model_for(role)
                if preset not in by_preset:
                    backend = scripted(preset) if scripted is not None else None
                    by_preset[preset] = (StructuredClient(backend, cache=None, max_retries=0) if backend is not None
                                         else client_for(spec, role, run_dir, cache=cache, engines=engines))
                by_role[role] = by_preset[preset]
        except BaseException:
            if cache is not None:
                cache.close()
            raise
        return cls(by_role, dict(aliases or {}), cache)

    def for_role(self, role: str) -> StructuredClient:
        return self.by_role[self.aliases.get(role, role)]

    def distinct(self) -> list[StructuredClient]:
        return list({id(c): c for c in self.by_role.values()}.values())

    async def aclose(self) -> None:
        for c in self.distinct():
            await c.aclose()
        if self.cache is not None:
            self.cache.close()
