"""The schemas an AgentLeak run asks each role for, for the preflight (``runtime.preflight``): the
action schema of every agent of the first scenario in each setting the run sweeps (single and
multi-agent systems differ in tools and peers), the tier-3 leak judge's schema over every field
forbidden on a channel, and the semantic task judge's verdict."""

from __future__ import annotations

from collections.abc import Sequence

from localbench.benchmarks.agentleak.judges import judge_calls
from localbench.benchmarks.agentleak.scenario import CHANNELS, Scenario
from localbench.benchmarks.agentleak.simulate import settings_of, sim_settings
from localbench.benchmarks.agentleak.system import AgentSystem
from localbench.benchmarks.agentleak.task_judge import TASK_JUDGE, verdict_model
from localbench.serving.output import OutputSpec
from localbench.spec import RunSpec


def preflight_outputs(spec: RunSpec, scenarios: Sequence[Scenario]) -> dict[str, list[OutputSpec]]:
    if not scenarios:
        return {}
    sc = scenarios[0]
    agent: list[OutputSpec] = []
    for condition, setting in zip(spec.conditions or [], settings_of(spec)):
        system = AgentSystem(sc, setting, None, sim_settings(spec, sc.vertical), key="preflight", condition=condition)
        agent += [system.action_spec(a) for a in system.agents]
    task = OutputSpec.from_model(verdict_model(1))
    judge = [OutputSpec(schema=task.schema, model=task.model, name=TASK_JUDGE)]
    for channel in CHANNELS:
        calls = judge_calls(sc, channel, " ".join(f.value for f in sc.vault), lambda messages: True)
        if calls:
            judge.append(OutputSpec.from_schema(calls[0].schema, name=calls[0].judge))
            break
    return {"agent": agent, "judge": judge}
