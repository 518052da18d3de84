"""AgentSocialBench's simulator: what the shared simulate stage (``runtime.harness``) runs for it.

Every (scenario × privacy level × seed index) is one simulation, keyed
``<scenario id>|<level>|<seed index>``; the dyadic engine plays CD, MC and CU, the graph engine
the multi-party categories. Resume, failure records, sharding and provenance are the harness's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localbench.benchmarks.asb.actions import COORDINATOR_SPEC, reply_spec, specs_hash
from localbench.benchmarks.asb.design import DEFAULT_MAX_ROUNDS
from localbench.benchmarks.asb.dyadic import DyadicSimulation
from localbench.benchmarks.asb.engine import (CU_MAX_REDIRECTS, CU_USER_EXCHANGES, MIN_MESSAGES_FOR_DONE, TEMPERATURES,
                                              SimSettings, SimTask, Simulation, default_message_chars)
from localbench.benchmarks.asb.graph import GraphSimulation
from localbench.benchmarks.asb.ladder import LevelError, resolve_levels
from localbench.benchmarks.asb.prompting import prompt_set_hash, template_hashes
from localbench.benchmarks.asb.scenario import CATEGORY_NAMES, Scenario
from localbench.runlog import Transcript
from localbench.runtime import harness
from localbench.runtime.clients import RoleClients
from localbench.runtime.harness import Simulator, Unit, model_provenance, scenarios_hash
from localbench.runtime.summary import SimulationSummary
from localbench.spec import RunSpec, SpecError

CALL_ROLES = ("agent", "user_sim", "coordinator")
ALIASES = {"coordinator": "agent"}  # a team's coordinator is played by the agent model


# -- planning ----------------------------------------------------------------------------------
def check_spec(spec: RunSpec) -> None:
    """Simulation-specific checks of a spec, with the field named (round limits are checked
    against the design when the spec is validated)."""
    try:
        resolve_levels(spec.conditions)
    except LevelError as e:  # named as the spec's field, as the other benchmarks' level errors are
        raise SpecError(f"field 'conditions': {e}") from e
    # an unknown preset is refused by the run plan, before anything is written (runtime.plan)


def settings_for(spec: RunSpec, category: str) -> SimSettings:
    chars = spec.settings.message_max_chars or default_message_chars(spec.max_tokens)
    return SimSettings(run_seed=spec.seed, max_rounds=spec.max_rounds_for(category), max_tokens=spec.max_tokens,
                       message_max_chars=chars)


def engine_for(scenario: Scenario) -> type[Simulation]:
    return DyadicSimulation if scenario.is_dyadic else GraphSimulation


def plan(spec: RunSpec, scenarios: list[Scenario]) -> list[Unit]:
    """Every simulation of the run, in a stable order (the harness keeps this shard's share)."""
    levels = resolve_levels(spec.conditions)
    tasks = [SimTask(sc, lv, i) for sc in scenarios for lv in levels for i in range(spec.seeds)]
    return [Unit(t.scenario.id, t.scenario.category, t.level.label, t.seed_index, task=t) for t in tasks]


def make_simulation(task: SimTask, clients: RoleClients, spec: RunSpec) -> Simulation:
    return engine_for(task.scenario)(task, clients, settings_for(spec, task.scenario.category))


# -- provenance --------------------------------------------------------------------------------
def provenance(spec: RunSpec, clients: RoleClients, scenarios: list[Scenario], n_issues: int) -> dict[str, Any]:
    """What spec.yaml records about the simulation stage."""
    models = model_provenance(clients, CALL_ROLES)
    chars = {cat: settings_for(spec, cat).message_max_chars for cat in DEFAULT_MAX_ROUNDS}
    return {
        "models": models,
        "levels": {lv.label: {"mode": lv.mode, "components": list(lv.components)} for lv in resolve_levels(spec.conditions)},
        "prompts": template_hashes(),
        "prompt_set": prompt_set_hash(),
        "action_schemas": {sc.id: specs_hash(engine_for(sc).action_specs(sc, chars[sc.category])) for sc in scenarios},
        "reply_schema": reply_spec(chars["CD"]).schema_hash,
        "coordinator_schema": COORDINATOR_SPEC.schema_hash,
        "defaults": {
            "max_rounds": {cat: spec.max_rounds_for(cat) for cat in DEFAULT_MAX_ROUNDS},
            "temperatures": dict(TEMPERATURES),
            "max_tokens": spec.max_tokens,
            "message_max_chars": chars["CD"],
            "min_messages_for_done": MIN_MESSAGES_FOR_DONE,
            "cu_max_redirects": CU_MAX_REDIRECTS,
            "cu_user_exchanges": CU_USER_EXCHANGES,
        },
        "scenarios": {"source": spec.scenarios, "n": len(scenarios), "load_issues": n_issues,
                      "categories": sorted({CATEGORY_NAMES[s.category] for s in scenarios})},
    }


def fingerprint(scenarios: list[Scenario]) -> dict[str, str]:
    """What besides the spec makes two runs the same experiment (spec.yaml's ``fingerprint``; the
    engine each role ran on is added once the models are open)."""
    return {"prompt_set": prompt_set_hash(), "scenarios": scenarios_hash(scenarios)}


def load_for(spec: RunSpec) -> tuple[list[Scenario], int]:
    """The spec's scenarios (source, categories, limit, the subset its settings name) and the number
    of load warnings."""
    from localbench.benchmarks.asb.loaders import load_scenarios

    res = load_scenarios(spec.scenarios, spec.categories, spec.limit, subset=spec.settings.subset)
    return res.scenarios, len(res.issues)


class AsbSimulator(Simulator):
    """``runtime.harness.Simulator`` for AgentSocialBench."""

    call_roles = CALL_ROLES
    aliases = ALIASES

    def check(self, spec: RunSpec) -> None:
        check_spec(spec)

    def load(self, spec: RunSpec) -> tuple[list[Scenario], int]:
        return load_for(spec)

    def plan(self, spec: RunSpec, scenarios: list[Scenario]) -> list[Unit]:
        return plan(spec, scenarios)

    def fingerprint(self, scenarios: list[Scenario]) -> dict[str, str]:
        return fingerprint(scenarios)

    def provenance(self, spec: RunSpec, clients: RoleClients, scenarios: list[Scenario], n_issues: int) -> dict[str, Any]:
        return provenance(spec, clients, scenarios, n_issues)

    async def play(self, unit: Unit, clients: RoleClients, spec: RunSpec) -> Transcript:
        return await make_simulation(unit.task, clients, spec).run()


# -- entry points (the shared harness with this simulator) ---------------------------------------
def open_clients(spec: RunSpec, run_dir: str | Path | None = None) -> RoleClients:
    """One client per distinct preset among the simulation roles, sharing the run's cache."""
    return harness.open_clients(spec, AsbSimulator(), run_dir)


async def simulate_scenarios(spec: RunSpec, scenarios: list[Scenario], clients: RoleClients,
                             run_dir: str | Path | None = None, *, progress: bool | None = None,
                             n_issues: int = 0) -> SimulationSummary:
    """Every simulation of ``spec`` over ``scenarios`` not yet in the run's transcripts."""
    return await harness.simulate_scenarios(spec, AsbSimulator(), scenarios, clients, run_dir, progress=progress,
                                            n_issues=n_issues)


def simulate(spec: RunSpec, *, progress: bool | None = None) -> SimulationSummary:
    """The whole stage: load, open the models, simulate, close."""
    return harness.simulate(spec, AsbSimulator(), progress=progress)
