"""The clients a run talks to, by role: which preset plays a role comes from the run's spec (and
its benchmark's design), how it is served from ``serving.session``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localbench.serving.cache import ResponseCache
from localbench.serving.client import StructuredClient
from localbench.serving.session import RoleServing, open_cache, open_client
from localbench.spec import RunSpec

if TYPE_CHECKING:
    from localbench.runtime.plan import RunPlan


def run_cache(spec: RunSpec, run_dir: str | Path) -> ResponseCache | None:
    """The run's response cache: spec.cache, else <run dir>/cache.sqlite; None with no_cache."""
    return open_cache(spec.cache, Path(run_dir), spec.no_cache)


Engines = Mapping[tuple[str, str], RoleServing]
"""(role, preset) -> how ``check_models`` chose to serve it: a run plan's entries (``runtime.plan``)
by role and preset, for a caller that has no plan."""


def client_for(spec: RunSpec, role: str, run_dir: str | Path, cache: ResponseCache | None = None,
               engines: Engines | None = None, plan: RunPlan | None = None) -> StructuredClient:
    """A client for the preset that plays ``role`` (one of the design's roles): opened on the run
    plan's entry for it where there is one (nothing looked up again), else as ``engines`` chose
    (else chosen now)."""
    cache = cache if cache is not None else run_cache(spec, run_dir)
    if plan is not None:
        return open_client(plan.entry(role), spec.serving, cache=cache, role=role)
    preset = spec.model_for(role)
    chosen = (engines or {}).get((role, preset))
    return open_client(chosen if chosen is not None else preset, spec.serving, spec.url_for(role), cache, role=role)


def check_models(spec: RunSpec, roles: Iterable[str] | None = None) -> dict[tuple[str, str], RoleServing]:
    """Refuse at once a role (default: every role of the design) whose model cannot run here;
    returns how each is served (``Engines``: the entries of the run plan ``plan_run`` builds)."""
    from localbench.runtime.plan import plan_run

    plan = plan_run(spec, roles)
    return {(r, plan.models[r]): e for r, e in plan.served.items()}


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
             scripted: Callable[[str], Any | None] | None = None, engines: Engines | None = None,
             plan: RunPlan | None = None) -> "RoleClients":
        """``scripted``: preset -> a backend that plays it with no model, or None (the benchmark's
        ``scripted_backend``, handed down by the pipeline); such a client is uncached (its replies
        follow the simulation's state, not the prompt alone) and never retried. ``plan``: the run's
        (each role's preset and engine as planned, nothing looked up again)."""
        cache = run_cache(spec, run_dir)
        by_preset: dict[str, StructuredClient] = {}
        by_role: dict[str, StructuredClient] = {}
        try:
            for role in roles:
                preset = plan.model_for(role) if plan is not None else spec.model_for(role)
                if preset not in by_preset:
                    backend = scripted(preset) if scripted is not None else None
                    by_preset[preset] = (StructuredClient(backend, cache=None, max_retries=0) if backend is not None
                                         else client_for(spec, role, run_dir, cache=cache, engines=engines, plan=plan))
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
