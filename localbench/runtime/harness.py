"""The simulate stage every benchmark shares: plan → resume → run concurrently → record.

A benchmark hands over a ``Simulator`` (how to load its scenarios, plan its simulations, play one
and describe itself); this does the rest the same way for all of them:

- every simulation is a ``Unit`` keyed ``<scenario>|<condition>|<seed index>``; with a shard set, only
  this shard's units run (``RunSpec.select_shard``);
- spec.yaml records the resolved spec, the simulator's provenance and a fingerprint (prompts,
  scenario contents, engines); resuming a directory made with other settings is refused before any
  model is loaded;
- all units run as coroutines over one client per preset (``runtime.scheduler``), so the engine
  sees a turn of every live simulation at once; each finished one is appended to
  transcripts.jsonl as it ends, and a rerun skips the keys already there;
- a simulation that raises is written as a failed ``Transcript`` (scored as failed, never as no
  leak), except for engine failures (a dead server, missing weights): those go to
  sim_errors.jsonl only and the simulation runs again on the next attempt.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from localbench.runlog import JsonlStore, RunDir, Transcript, run_lock
from localbench.runtime.clients import Engines, RoleClients
from localbench.runtime.plan import RunPlan
from localbench.runtime.preflight import check_engines, engines_to_check
from localbench.runtime.scheduler import Job, JobError, run_jobs
from localbench.runtime.summary import SimulationSummary
from localbench.serving.output import OutputSpec
from localbench.serving.session import concurrency, served_limits
from localbench.serving.types import EngineError
from localbench.spec import RunSpec, SpecError


@dataclass(frozen=True)
class Unit:
    """One simulation of a run's plan: its identity, and the simulator's own task object."""

    scenario: str
    category: str
    condition: str  # a value of the benchmark's condition axis
    seed_index: int = 0
    task: Any = None

    @property
    def key(self) -> str:
        return f"{self.scenario}|{self.condition}|{self.seed_index}"


def every_unit(spec: RunSpec, scenarios: Iterable[Any], id_of: Callable[[Any], str],
               category_of: Callable[[Any], str]) -> list[Unit]:
    """The plan most simulators make: one Unit per scenario × condition × seed, the scenario its task."""
    return [Unit(id_of(s), category_of(s), condition, i, task=s)
            for s in scenarios for condition in spec.conditions or [] for i in range(spec.seeds)]


class Simulator:
    """What a benchmark gives the shared simulate stage: subclass it and fill in the methods that
    raise; ``aliases`` and ``prepare`` have defaults."""

    call_roles: tuple[str, ...] = ()  # the roles its calls are made as (recorded in the fingerprint)
    aliases: Mapping[str, str] = {}  # noqa: RUF012 - call role -> the design role whose model plays it

    def check(self, spec: RunSpec) -> None:
        """Refuse a spec it cannot run (SpecError naming the field), before anything is written."""

    def load(self, spec: RunSpec) -> tuple[list[Any], int]:
        """The spec's scenarios and the number of load warnings."""
        raise NotImplementedError

    def plan(self, spec: RunSpec, scenarios: list[Any]) -> list[Unit]:
        """Every simulation of the run, before sharding."""
        raise NotImplementedError

    def fingerprint(self, scenarios: list[Any]) -> dict[str, str]:
        """What besides the spec makes two runs the same experiment (prompt set, scenario contents)."""
        return {}

    def provenance(self, spec: RunSpec, clients: RoleClients, scenarios: list[Any], n_issues: int) -> dict[str, Any]:
        """spec.yaml's ``simulation`` section (see ``model_provenance`` for its models)."""
        return {}

    def play(self, unit: Unit, clients: RoleClients, spec: RunSpec) -> Awaitable[Transcript]:
        """Play one simulation to its end."""
        raise NotImplementedError

    async def prepare(self, spec: RunSpec, units: list[Unit], clients: RoleClients) -> str:
        """Work that is no model's, done once for all of a run's simulations before they start
        (SopriBench reads its posts' images with OCR), so that it neither repeats per simulation nor
        competes with the engine while the simulations run; a line saying what was done ("" for none)."""
        return ""


class Along(Protocol):
    """Work that follows each simulation as it ends, on the same clients (the judge, when it shares
    the agent's engine: ``pipeline.JudgeAlong``), so the engine has work in the simulations' tail."""

    def start(self, clients: RoleClients) -> None:
        """Called once spec.yaml is written, before the first simulation starts."""

    def add(self, transcript: Transcript) -> None:
        """A simulation was just recorded: start its work (without waiting for it)."""

    async def finish(self) -> None:
        """After the last simulation: wait for all of it, and do what is left."""


async def prepare_units(simulator: Simulator, spec: RunSpec, units: list[Unit], clients: RoleClients,
                        *, progress: bool | None = None) -> float:
    """Run the simulator's ``prepare`` over the units to simulate; seconds spent."""
    if not units:
        return 0.0
    t0 = time.monotonic()
    line = await simulator.prepare(spec, units, clients)
    took = time.monotonic() - t0
    if line and progress is not False:
        print(f"prepare: {line} ({took:.1f} s)", file=sys.stderr, flush=True)
    return took


def model_provenance(clients: RoleClients, roles: Sequence[str]) -> dict[str, Any]:
    """What spec.yaml records of the model behind each role."""
    out = {}
    for role in roles:
        c = clients.for_role(role)
        b = c.backend
        out[role] = {"preset": c.model_name, "identity": asdict(b.identity), "engine": b.engine,
                     "grammar_backend": b.grammar_backend, "max_model_len": b.max_model_len,
                     "describe": b.describe()}
    return out


def scenarios_hash(scenarios: Sequence[Any]) -> str:
    """The scenarios' contents (pydantic models, not where they were read from: ``source`` is left
    out): an edited file makes another run."""
    import hashlib

    docs = sorted(json.dumps(s.model_dump(mode="json", exclude={"source"}), sort_keys=True) for s in scenarios)
    return hashlib.sha256("\n".join(docs).encode()).hexdigest()[:16]


def _write_spec(rd: RunDir, spec: RunSpec, section: dict[str, Any], fingerprint: dict[str, str]) -> None:
    """Write spec.yaml with the simulation section, keeping other stages' sections; refuses to
    resume a run made with other settings, prompts or scenario contents (``fingerprint``)."""
    old = rd.read_spec() if rd.spec_file.exists() else {}
    keep = {k: v for k, v in old.items()
            if k not in ("spec", "created", "resumed", "versions", "fingerprint", "simulation")}
    plain = json.loads(json.dumps(section, default=str))  # engine facts may be str subclasses (torch versions)
    rd.write_spec(spec, {**keep, "simulation": plain}, fingerprint)


def error_transcript(unit: Unit, model: str, err: JobError) -> Transcript:
    """The record of a simulation that raised: no entries, every metric of it fails."""
    return Transcript(key=unit.key, scenario=unit.scenario, category=unit.category, condition=unit.condition,
                      seed_index=unit.seed_index, model=model, termination="error", error=err.error,
                      traceback=err.traceback[-4000:], finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))


async def simulate_scenarios(spec: RunSpec, simulator: Simulator, scenarios: list[Any], clients: RoleClients,
                             run_dir: str | Path | None = None, *, progress: bool | None = None,
                             n_issues: int = 0, along: Along | None = None,
                             preflight: Mapping[str, Sequence[OutputSpec]] | None = None) -> SimulationSummary:
    """Run every simulation of ``spec`` over ``scenarios`` not yet in the run's transcripts;
    ``preflight``: role -> the schemas each engine answers once before the first simulation
    (``runtime.preflight``: a refusal stops the stage here, with nothing written as a simulation)."""
    simulator.check(spec)
    rd = RunDir(run_dir if run_dir is not None else spec.run_dir)
    units = simulator.plan(spec, scenarios)
    mine = set(spec.select_shard([u.key for u in units]))
    units = [u for u in units if u.key in mine]
    engines = ",".join(f"{role}={clients.for_role(role).backend.engine}" for role in simulator.call_roles)
    limits = concurrency(spec.serving, engines=len(clients.distinct()),
                         served=served_limits(c.backend for c in clients.distinct()))
    _write_spec(rd, spec, {**simulator.provenance(spec, clients, scenarios, n_issues), "concurrency": limits.as_dict()},
                {**simulator.fingerprint(scenarios), "engines": engines})
    store = rd.transcripts()
    errors_file = JsonlStore(rd.sim_errors_path, key_field="id")
    todo = [u for u in units if u.key not in store]
    summary = SimulationSummary(rd.path, total=len(units), already_done=len(units) - len(todo))
    ends: Counter[str] = Counter()
    by_key = {u.key: u for u in todo}
    primary = clients.for_role(spec.design.primary_role).model_name

    def on_done(job: Job, rec: Transcript) -> None:
        store.append(rec)
        if along is not None:
            along.add(rec)
        summary.done += 1
        ends[rec.termination] += 1
        summary.failed_turns += rec.n_failed_turns
        summary.context_cuts += rec.n_context_cuts
        summary.context_exhausted += rec.termination == "context_exhausted"

    def on_error(job: Job, err: JobError) -> None:
        errors_file.append({"id": f"{job.key}@{time.time():.6f}", "key": job.key, "error": err.error,
                            "traceback": err.traceback[-4000:]})
        if isinstance(err.exception, EngineError):
            summary.engine_errors += 1
            summary.first_engine_error = summary.first_engine_error or err.error
            return
        rec = error_transcript(by_key[job.key], primary, err)
        store.append(rec)
        if along is not None:
            along.add(rec)
        summary.errors += 1
        summary.first_error = summary.first_error or err.error
        ends["error"] += 1

    if todo and preflight:
        await check_engines(engines_to_check(clients, preflight))
    if summary.already_done:  # the progress below counts only what is left
        print(f"resuming {rd.path}: {summary.already_done} of {summary.total} simulations already done, "
              f"{len(todo)} to run", file=sys.stderr, flush=True)
    summary.prepare_s = await prepare_units(simulator, spec, todo, clients, progress=progress)
    if along is not None:
        along.start(clients)
    jobs = [Job(u.key, (lambda u=u: simulator.play(u, clients, spec)), label=u.key) for u in todo]
    report = await run_jobs(jobs, concurrency=limits.simulations, on_done=on_done, on_error=on_error,
                            stats=[c.stats for c in clients.distinct()], progress=progress)
    summary.terminations = dict(ends)
    summary.wall_s = report.wall_s
    if along is not None:
        await along.finish()
    for t in store.read():  # what the run as a whole has (a resumed run's earlier simulations too)
        if t.key in mine:
            summary.recorded_ok += t.termination != "error"
            summary.recorded_failed += t.termination == "error"
            if t.termination == "error" and not summary.first_error:
                summary.first_error = t.error or "error"
    return summary


def open_clients(spec: RunSpec, simulator: Simulator, run_dir: str | Path | None = None,
                 scripted: Callable[[str], Any | None] | None = None, engines: Engines | None = None,
                 plan: RunPlan | None = None) -> RoleClients:
    """One client per distinct preset among the design's simulation roles, sharing the run's cache;
    ``scripted``: the benchmark's scripted backends (``RoleClients.open``); ``engines``: the ones
    the command chose (``check_models``); ``plan``: the run plan (``runtime.plan``) they open on."""
    return RoleClients.open(spec, spec.design.simulation_roles, run_dir if run_dir is not None else spec.run_dir,
                            simulator.aliases, scripted, engines, plan)


def simulate(spec: RunSpec, simulator: Simulator, *, progress: bool | None = None,
             along: Along | None = None, scripted: Callable[[str], Any | None] | None = None,
             load: Callable[[RunSpec], tuple[list[Any], int]] | None = None,
             engines: Engines | None = None, plan: RunPlan | None = None,
             preflight: Callable[[list[Any]], Mapping[str, Sequence[OutputSpec]]] | None = None) -> SimulationSummary:
    """The whole stage in one call: load, check the directory, open the models, simulate, close;
    ``along``: work that follows each simulation on the same clients (see ``Along``); ``scripted``:
    preset -> a backend that plays it with no model, or None (``RoleClients.open``); ``load``: the
    scenarios as the command loaded them once (default: ``simulator.load``); ``engines``: the
    engine chosen for each role once (``check_models``), or ``plan``: the run plan, each role's
    preset and engine resolved once (``runtime.plan``); ``preflight``: the scenarios -> role ->
    the schemas each engine answers once first (``simulate_scenarios``)."""
    simulator.check(spec)
    scenarios, n_issues = (load or simulator.load)(spec)
    if not scenarios:
        raise SpecError(f"no scenarios selected from '{spec.scenarios}' (categories {spec.categories}, "
                        f"limit {spec.limit})")
    RunDir(spec.run_dir).check_same_run(spec, simulator.fingerprint(scenarios))  # before any model is loaded

    async def go() -> SimulationSummary:
        clients = open_clients(spec, simulator, scripted=scripted, engines=engines, plan=plan)
        try:
            return await simulate_scenarios(spec, simulator, scenarios, clients, progress=progress,
                                            n_issues=n_issues, along=along,
                                            preflight=preflight(scenarios) if preflight is not None else None)
        finally:
            await clients.aclose()

    with run_lock(spec.run_dir):  # a second command on this run directory is refused at once
        return asyncio.run(go())
