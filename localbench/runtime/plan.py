"""The run plan: how each role of a run is served, resolved once from its spec and this machine.

A run's roles are looked up once, here: the preset that plays each (``RunSpec.model_for``), the
loaded preset, the engine that serves it, the server it is reached at, its share of a GPU it
shares and the phase it is open in (the simulation roles together, then the judge alone, or the
judge pipelined into the agent's engine). Every stage, the study runner and the engines read the
plan instead of asking the spec again, and ``plan.json`` in the run directory records it, so a
Slurm job and ``compare`` read what the run was planned with (docs/architecture.md, "The run plan").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localbench.errors import UserError
from localbench.files import write_atomic
from localbench.runlog import RunFiles, RunPaths
from localbench.serving.presets import Preset
from localbench.serving.session import RoleServing, check_models_here
from localbench.spec import NO_JUDGE, RunSpec

PLAN_FILE = RunFiles.PLAN
"""The plan's file in a run directory, beside spec.yaml."""

PLAN_VERSION = 1

STAGED, PIPELINED, NO_JUDGE_PHASE = "staged", "pipelined", "none"
"""The judge's phase: its own engine after the simulations' engines closed; the agent's engine,
judging each simulation as it ends; no judge call at all."""


@dataclass(frozen=True)
class RunPlan:
    """Each role's preset and, for the roles played by a model here, how it is served (``RoleServing``:
    the loaded preset, engine, URL, memory share); ``together``: the roles whose engines are open at
    once (the simulation phase); ``judge_phase``: STAGED, PIPELINED or NO_JUDGE_PHASE;
    ``concurrency``: the limits known before any engine opens (the spec's, or this device's for
    in-process engines; a server's own limit is read from it when its client opens)."""

    run_id: str
    benchmark: str
    models: Mapping[str, str]  # every role -> its preset name (or NO_JUDGE)
    served: Mapping[str, RoleServing]  # the roles played by a model -> how it is served
    together: tuple[tuple[str, ...], ...]
    judge_role: str
    judge_phase: str
    concurrency: Mapping[str, Any] = field(default_factory=dict)
    rule_judge: str | None = None  # the model-free judge the spec asks for (``RunSpec.rule_judge``), if any

    def model_for(self, role: str) -> str:
        return self.models[role]

    @property
    def judge_model(self) -> str:
        return self.models[self.judge_role]

    @property
    def judged(self) -> bool:
        return self.judge_model != NO_JUDGE

    def resolved_models(self) -> dict[str, str]:
        """Each role's preset, or for a judge that needs no model that judge's name (what spec.yaml's
        ``resolved_models`` records)."""
        return {**self.models, **({self.judge_role: self.rule_judge} if self.rule_judge else {})}

    def entry(self, role: str) -> RoleServing:
        """How ``role`` is served; a KeyError names the planned roles (a role the plan left out, a
        scripted agent's, has no engine)."""
        try:
            return self.served[role]
        except KeyError:
            raise KeyError(f"role '{role}' has no engine in the run plan (planned: {', '.join(self.served)})") from None

    def to_dict(self) -> dict[str, Any]:
        return {"version": PLAN_VERSION, "run_id": self.run_id, "benchmark": self.benchmark,
                "models": dict(self.models), "judge_role": self.judge_role, "judge_phase": self.judge_phase,
                "together": [list(g) for g in self.together], "concurrency": dict(self.concurrency),
                "rule_judge": self.rule_judge,
                "roles": {r: {"preset": e.preset.model_dump(mode="json") if e.preset is not None else None,
                              "engine": e.engine, "url": e.url, "gpu_memory_utilization": e.gpu_memory_utilization}
                          for r, e in self.served.items()}}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], where: str = "plan") -> "RunPlan":
        """The plan a ``to_dict`` wrote; a PlanError naming ``where`` and the field otherwise."""
        try:
            if doc.get("version") != PLAN_VERSION:
                raise PlanError(f"{where}: field 'version': {doc.get('version')!r}, expected {PLAN_VERSION}")
            served = {r: RoleServing(e["engine"], e.get("gpu_memory_utilization"),
                                     Preset.model_validate(e["preset"]) if e.get("preset") else None, e.get("url"))
                      for r, e in doc["roles"].items()}
            return cls(doc["run_id"], doc["benchmark"], dict(doc["models"]), served,
                       tuple(tuple(g) for g in doc["together"]), doc["judge_role"], doc["judge_phase"],
                       dict(doc.get("concurrency") or {}), doc.get("rule_judge"))
        except KeyError as e:
            raise PlanError(f"{where}: field {e.args[0]!r} is missing") from e
        except (TypeError, ValueError, AttributeError) as e:
            raise PlanError(f"{where}: not a run plan ({e})") from e

    def write(self, run_dir: str | Path) -> Path:
        path = RunPaths(run_dir).plan_path
        write_atomic(path, json.dumps(self.to_dict(), indent=1, sort_keys=False) + "\n")
        return path

    @classmethod
    def read(cls, run_dir: str | Path) -> "RunPlan":
        path = RunPaths(run_dir).plan_path
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError as e:
            raise PlanError(f"{path}: no run plan (written by `localbench run`, `simulate` and `study run`)") from e
        except json.JSONDecodeError as e:
            raise PlanError(f"{path}: not valid JSON ({e})") from e
        return cls.from_dict(doc, str(path))


class PlanError(UserError, ValueError):
    """A plan.json that cannot be read; names the file and field."""


def role_presets(spec: RunSpec) -> dict[str, str]:
    """Every role of the design -> the preset that plays it (``RunSpec.model_for``, once a role):
    where a run's presets are looked up, for its plan, Slurm's rendering and prefetch alike."""
    return {r: spec.model_for(r) for r in spec.design.role_names}


def open_together(design, roles: Iterable[str]) -> list[list[str]]:
    """The groups of ``roles`` whose engines are open at the same time: the simulation roles (one
    engine per distinct preset, all open while simulations run), then every other role alone. The
    judge's stage opens its engine after the simulations' engines have closed (a judge pipelined
    into the simulations is the agent's own engine, not another), so it never shares the GPU."""
    roles = list(roles)
    simulating = [r for r in roles if r in design.simulation_roles]
    return [simulating, *[[r] for r in roles if r not in simulating]]


def plan_run(spec: RunSpec, roles: Iterable[str] | None = None, pipelined: bool = False,
             models: Mapping[str, str] | None = None) -> RunPlan:
    """The run's plan, built once: each role's preset looked up once (``models``: already looked
    up, e.g. by a study), and every role in ``roles`` (default: every role of the design) checked
    to run here (``check_models_here``: an unknown preset, missing weights or a GPU split too thin
    is a UserError now) and given its engine, URL and memory share. ``pipelined``: the judge judges
    along the simulations on the agent's engine."""
    design = spec.design
    models = dict(models) if models is not None else role_presets(spec)
    names = list(roles) if roles is not None else list(design.role_names)
    urls = {r: spec.url_for(r) for r in names}
    together = open_together(design, names)
    served = check_models_here({r: models[r] for r in names}, spec.serving, urls, together)
    judged = models[design.judge_role] != NO_JUDGE
    phase = NO_JUDGE_PHASE if not judged else PIPELINED if pipelined else STAGED
    limits: dict[str, Any] = {}
    if spec.serving.max_concurrency or not any(e.engine == "openai" for e in served.values()):
        from localbench.serving.session import concurrency

        engines = len({served[r].preset.name for r in together[0] if r in served} or {""})
        limits = concurrency(spec.serving, engines=engines).as_dict()
    return RunPlan(spec.resolved_run_id, spec.benchmark, models, served, tuple(tuple(g) for g in together),
                   design.judge_role, phase, limits, spec.rule_judge)
