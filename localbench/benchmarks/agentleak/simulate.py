"""AgentLeak's simulator: what the shared simulate stage (``runtime.harness``) runs for it.

Every (scenario × setting × seed index) is one simulation, keyed ``<scenario>|<setting>|<seed>``;
the same scenario under ``single`` and ``multi`` (same seed index) is a pair. Resume, failure
records, sharding and provenance are the harness's.
"""

from __future__ import annotations

from typing import Any

from localbench.benchmarks.agentleak.actions import REASONING_CHARS
from localbench.benchmarks.agentleak.defenses import Setting, SettingError
from localbench.benchmarks.agentleak.prompting import PROMPTS
from localbench.benchmarks.agentleak.scenario import Scenario
from localbench.benchmarks.agentleak.system import TEMPERATURES, AgentSystem, Settings
from localbench.runlog import Transcript
from localbench.runtime.clients import RoleClients
from localbench.runtime.harness import Simulator, Unit, every_unit, model_provenance, scenarios_hash
from localbench.spec import RunSpec, SpecError

CALL_ROLES = ("agent",)


def settings_of(spec: RunSpec) -> list[Setting]:
    try:
        return [Setting.parse(lv) for lv in spec.conditions or []]
    except SettingError as e:
        raise SpecError(f"field 'conditions': {e}") from e


def sim_settings(spec: RunSpec, vertical: str) -> Settings:
    chars = spec.settings.text_max_chars or max(64, min(600, 3 * (spec.max_tokens - 40) - REASONING_CHARS))
    return Settings(run_seed=spec.seed, max_rounds=spec.max_rounds_for(vertical), max_tokens=spec.max_tokens,
                    text_chars=chars)


def load_for(spec: RunSpec) -> tuple[list[Scenario], int]:
    from localbench.benchmarks.agentleak.loaders import load_scenarios

    res = load_scenarios(spec.scenarios, spec.categories, spec.limit)
    return res.scenarios, len(res.issues)


class AgentLeakSimulator(Simulator):
    """``runtime.harness.Simulator`` for AgentLeak."""

    call_roles = CALL_ROLES
    aliases: dict[str, str] = {}

    def check(self, spec: RunSpec) -> None:
        settings_of(spec)  # its own settings (``extra``) were checked when the spec was read

    def load(self, spec: RunSpec) -> tuple[list[Scenario], int]:
        return load_for(spec)

    def plan(self, spec: RunSpec, scenarios: list[Scenario]) -> list[Unit]:
        return every_unit(spec, scenarios, lambda s: s.id, lambda s: s.vertical)

    def fingerprint(self, scenarios: list[Scenario]) -> dict[str, str]:
        return {"prompt_set": PROMPTS.set_hash(), "scenarios": scenarios_hash(scenarios)}

    def provenance(self, spec: RunSpec, clients: RoleClients, scenarios: list[Scenario], n_issues: int) -> dict[str, Any]:
        return {
            "models": model_provenance(clients, CALL_ROLES),
            "settings": {lv: {"mode": s.mode, "defenses": list(s.defenses)} for lv, s in zip(spec.conditions or [],
                                                                                              settings_of(spec))},
            "prompts": PROMPTS.hashes(),
            "prompt_set": PROMPTS.set_hash(),
            "defaults": {"max_rounds": {v: spec.max_rounds_for(v) for v in spec.design.categories},
                         "temperatures": dict(TEMPERATURES), "max_tokens": spec.max_tokens,
                         "text_max_chars": sim_settings(spec, spec.design.categories[0]).text_chars},
            "scenarios": {"source": spec.scenarios, "n": len(scenarios), "load_issues": n_issues},
        }

    async def play(self, unit: Unit, clients: RoleClients, spec: RunSpec) -> Transcript:
        s: Scenario = unit.task
        system = AgentSystem(s, Setting.parse(unit.condition), clients, sim_settings(spec, s.vertical), key=unit.key,
                             condition=unit.condition, seed_index=unit.seed_index)
        backend = clients.for_role("agent").backend
        if hasattr(backend, "attach"):  # a scripted agent (oracle.OracleBackend) reads the system it plays
            backend.attach(system)
        return await system.run()
