"""The simulation stage of an AgentSocialBench run: RunSpec → runs/<id>/transcripts.jsonl + spec.yaml.

Every (scenario × privacy level × seed index) is one simulation, keyed
``<scenario id>|<level>|<seed index>``. All of them run as coroutines over one client per model
(localbench.runtime.scheduler), so the engine sees a turn of every live simulation at once. Each
finished simulation is appended to transcripts.jsonl as it ends; a rerun of the same spec skips
the keys already there and replays finished model calls from the response cache, so an
interrupted run completes with nothing lost or duplicated.

A simulation that raises is written with its ``error`` (scored as failed, not retried), except
for engine failures (a dead server, missing weights): those are not the simulation's fault, so
they go to sim_errors.jsonl only and the simulation runs again on the next attempt.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

from localbench.benchmarks.asb.actions import COORDINATOR_SPEC, reply_spec, specs_hash
from localbench.benchmarks.asb.dyadic import DyadicSimulation
from localbench.benchmarks.asb.engine import (CU_MAX_REDIRECTS, CU_USER_EXCHANGES, DEFAULT_MAX_ROUNDS,
                                              MIN_MESSAGES_FOR_DONE, TEMPERATURES, SimSettings, SimTask, Simulation,
                                              default_message_chars)
from localbench.benchmarks.asb.graph import GraphSimulation
from localbench.benchmarks.asb.ladder import resolve_levels
from localbench.benchmarks.asb.prompting import prompt_set_hash, template_hashes
from localbench.benchmarks.asb.scenario import CATEGORY_NAMES, Scenario
from localbench.rundir import RunDir
from localbench.runtime.records import JsonlStore
from localbench.runtime.scheduler import Job, JobError, run_jobs
from localbench.runtime.summary import SimulationSummary
from localbench.serving.cache import ResponseCache
from localbench.serving.client import StructuredClient
from localbench.serving.types import EngineError
from localbench.spec import RunSpec, SpecError

SIM_ROLES = ("agent", "user_sim", "coordinator")


# -- clients -----------------------------------------------------------------------------------
@dataclass
class SimClients:
    """The clients a simulation talks to, by role. Roles played by the same preset share one
    client (one backend, one batch); the coordinator is played by the agent model."""

    by_role: dict[str, StructuredClient]
    cache: ResponseCache | None = None

    def for_role(self, role: str) -> StructuredClient:
        return self.by_role["user_sim" if role == "user_sim" else "agent"]

    def distinct(self) -> list[StructuredClient]:
        return list({id(c): c for c in self.by_role.values()}.values())

    async def aclose(self) -> None:
        for c in self.distinct():
            await c.aclose()
        if self.cache is not None:
            self.cache.close()


def open_clients(spec: RunSpec, run_dir: str | Path | None = None) -> SimClients:
    """One backend per distinct preset among the simulation roles, sharing the run's cache."""
    from localbench.serving.session import cache_for, open_client

    rd = Path(run_dir) if run_dir is not None else spec.run_dir
    cache = cache_for(spec, rd)
    agent = open_client(spec, "agent", rd, cache=cache)
    same = spec.models.for_role("user_sim") == spec.models.for_role("agent")
    user = agent if same else open_client(spec, "user_sim", rd, cache=cache)
    return SimClients({"agent": agent, "user_sim": user}, cache)


# -- planning ----------------------------------------------------------------------------------
def max_rounds_for(spec: RunSpec, category: str) -> int:
    """The round limit of a category: spec.max_rounds[category], else the documented default."""
    return int(spec.max_rounds.get(category, DEFAULT_MAX_ROUNDS[category]))


def check_spec(spec: RunSpec) -> None:
    """Simulation-specific checks of a spec, with the field named."""
    for k, v in spec.max_rounds.items():
        if k not in DEFAULT_MAX_ROUNDS:
            raise SpecError(f"field 'max_rounds.{k}': unknown category (expected one of {', '.join(DEFAULT_MAX_ROUNDS)})")
        if not isinstance(v, int) or v < 1:
            raise SpecError(f"field 'max_rounds.{k}': must be a positive integer, got {v!r}")
    chars = spec.extra.get("message_max_chars")
    if chars is not None and (not isinstance(chars, int) or chars < 1):
        raise SpecError(f"field 'extra.message_max_chars': must be a positive integer, got {chars!r}")
    resolve_levels(spec.levels)
    from localbench.serving.presets import load_preset

    for role in ("agent", "user_sim"):
        load_preset(spec.models.for_role(role))  # an unknown preset fails before anything is written


def settings_for(spec: RunSpec, category: str) -> SimSettings:
    chars = spec.extra.get("message_max_chars") or default_message_chars(spec.max_tokens)
    return SimSettings(run_seed=spec.seed, max_rounds=max_rounds_for(spec, category), max_tokens=spec.max_tokens,
                       message_max_chars=int(chars))


def engine_for(scenario: Scenario) -> type[Simulation]:
    return DyadicSimulation if scenario.is_dyadic else GraphSimulation


def plan(spec: RunSpec, scenarios: Iterable[Scenario]) -> list[SimTask]:
    """Every simulation of the run (this shard's share, with a shard set), in a stable order."""
    levels = resolve_levels(spec.levels)
    tasks = [SimTask(sc, lv, i) for sc in scenarios for lv in levels for i in range(spec.seeds)]
    mine = set(spec.select_shard([t.key for t in tasks]))
    return [t for t in tasks if t.key in mine]


def make_simulation(task: SimTask, clients: SimClients, spec: RunSpec) -> Simulation:
    return engine_for(task.scenario)(task, clients, settings_for(spec, task.scenario.category))


# -- provenance --------------------------------------------------------------------------------
def provenance(spec: RunSpec, clients: SimClients, scenarios: list[Scenario], n_issues: int) -> dict[str, Any]:
    """What spec.yaml records about the simulation stage."""
    models = {}
    for role in SIM_ROLES:
        c = clients.for_role(role)
        b = c.backend
        models[role] = {"preset": c.model_name, "identity": asdict(b.identity), "engine": b.engine,
                        "grammar_backend": b.grammar_backend, "max_model_len": b.max_model_len,
                        "describe": b.describe()}
    chars = {cat: settings_for(spec, cat).message_max_chars for cat in DEFAULT_MAX_ROUNDS}
    return {
        "models": models,
        "levels": {lv.label: {"mode": lv.mode, "components": list(lv.components)} for lv in resolve_levels(spec.levels)},
        "prompts": template_hashes(),
        "prompt_set": prompt_set_hash(),
        "action_schemas": {sc.id: specs_hash(engine_for(sc).action_specs(sc, chars[sc.category])) for sc in scenarios},
        "reply_schema": reply_spec(chars["CD"]).schema_hash,
        "coordinator_schema": COORDINATOR_SPEC.schema_hash,
        "defaults": {
            "max_rounds": {cat: max_rounds_for(spec, cat) for cat in DEFAULT_MAX_ROUNDS},
            "temperatures": dict(TEMPERATURES),
            "max_tokens": spec.max_tokens,
            "message_max_chars": chars["CD"],
            "min_messages_for_done": MIN_MESSAGES_FOR_DONE,
            "cu_max_redirects": CU_MAX_REDIRECTS,
            "cu_user_exchanges": CU_USER_EXCHANGES,
            "concurrency": spec.serving.max_concurrency,
        },
        "scenarios": {"source": spec.scenarios, "n": len(scenarios), "load_issues": n_issues,
                      "categories": sorted({CATEGORY_NAMES[s.category] for s in scenarios})},
    }


def fingerprint(scenarios: list[Scenario]) -> dict[str, str]:
    """What besides the spec makes two runs the same experiment (spec.yaml's ``fingerprint``; the
    engine each role ran on is added once the models are open)."""
    return {"prompt_set": prompt_set_hash(), "scenarios": scenarios_hash(scenarios)}


def scenarios_hash(scenarios: list[Scenario]) -> str:
    """The scenarios' contents (not where they were read from): an edited file makes another run."""
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


# -- running -----------------------------------------------------------------------------------
def error_record(task: SimTask, clients: SimClients, err: JobError) -> dict[str, Any]:
    s = task.scenario
    return {"key": task.key, "scenario": s.id, "category": s.category, "subtype": s.subtype,
            "level": task.level.label, "mode": task.level.mode, "seed_index": task.seed_index,
            "model": clients.for_role("agent").model_name, "termination": "error", "error": err.error,
            "traceback": err.traceback[-4000:], "entries": [], "rounds": 0, "n_messages": 0, "n_calls": 0,
            "n_failed_turns": 0, "context_cuts": [], "n_context_cuts": 0, "tokens": {"in": 0, "out": 0},
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


async def simulate_scenarios(
    spec: RunSpec, scenarios: list[Scenario], clients: SimClients, run_dir: str | Path | None = None, *,
    progress: bool | None = None, n_issues: int = 0,
) -> SimulationSummary:
    """Run every simulation of ``spec`` over ``scenarios`` not yet in the run's transcripts."""
    check_spec(spec)
    rd = RunDir(run_dir if run_dir is not None else spec.run_dir)
    tasks = plan(spec, scenarios)
    engines = ",".join(f"{role}={clients.for_role(role).backend.engine}" for role in SIM_ROLES)
    _write_spec(rd, spec, provenance(spec, clients, scenarios, n_issues), {**fingerprint(scenarios), "engines": engines})
    store = rd.transcripts()
    errors_file = JsonlStore(rd.path / "sim_errors.jsonl", key_field="id")
    todo = [t for t in tasks if t.key not in store]
    summary = SimulationSummary(rd.path, total=len(tasks), already_done=len(tasks) - len(todo))
    ends: Counter[str] = Counter()
    by_key = {t.key: t for t in todo}

    def on_done(job: Job, rec: dict[str, Any]) -> None:
        store.append(rec)
        summary.done += 1
        ends[rec["termination"]] += 1
        summary.failed_turns += rec["n_failed_turns"]
        summary.context_cuts += rec["n_context_cuts"]
        summary.context_exhausted += rec["termination"] == "context_exhausted"

    def on_error(job: Job, err: JobError) -> None:
        errors_file.append({"id": f"{job.key}@{time.time():.6f}", "key": job.key, "error": err.error,
                            "traceback": err.traceback[-4000:]})
        if isinstance(err.exception, EngineError):
            summary.engine_errors += 1
            summary.first_engine_error = summary.first_engine_error or err.error
            return
        store.append(error_record(by_key[job.key], clients, err))
        summary.errors += 1
        ends["error"] += 1

    if summary.already_done:  # the progress below counts only what is left
        print(f"resuming {rd.path}: {summary.already_done} of {summary.total} simulations already done, "
              f"{len(todo)} to run", file=sys.stderr, flush=True)
    jobs = [Job(t.key, (lambda t=t: make_simulation(t, clients, spec).run()), label=t.key) for t in todo]
    report = await run_jobs(jobs, concurrency=spec.serving.max_concurrency, on_done=on_done, on_error=on_error,
                            stats=[c.stats for c in clients.distinct()], progress=progress)
    summary.terminations = dict(ends)
    summary.wall_s = report.wall_s
    return summary


def load_for(spec: RunSpec) -> tuple[list[Scenario], int]:
    """The spec's scenarios (source, categories, limit) and the number of load warnings."""
    from localbench.benchmarks.asb.loaders import load_scenarios

    res = load_scenarios(spec.scenarios, spec.categories, spec.limit)
    return res.scenarios, len(res.issues)


async def simulate_run(spec: RunSpec, clients: SimClients, run_dir: str | Path | None = None, *,
                       progress: bool | None = None) -> SimulationSummary:
    """Load the spec's scenarios and simulate them with already-open clients."""
    scenarios, n_issues = load_for(spec)
    return await simulate_scenarios(spec, scenarios, clients, run_dir, progress=progress, n_issues=n_issues)


def simulate(spec: RunSpec, *, progress: bool | None = None) -> SimulationSummary:
    """The whole stage in one call: load, open the models, simulate, close."""
    check_spec(spec)
    scenarios, n_issues = load_for(spec)
    if not scenarios:
        raise SpecError(f"no scenarios selected from '{spec.scenarios}' (categories {spec.categories}, "
                        f"limit {spec.limit})")

    RunDir(spec.run_dir).check_same_run(spec, fingerprint(scenarios))  # before any model is loaded

    async def go() -> SimulationSummary:
        clients = open_clients(spec)
        try:
            return await simulate_scenarios(spec, scenarios, clients, progress=progress, n_issues=n_issues)
        finally:
            await clients.aclose()

    return asyncio.run(go())
