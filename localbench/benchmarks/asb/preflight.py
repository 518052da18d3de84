"""The schemas an AgentSocialBench run asks each role for, for the preflight (``runtime.preflight``):
from the first scenario of each engine (dyadic, graph) in the run, every agent action schema, the
simulated people's reply, the CU coordinator's decision, and the judges' schemas as they come out
of a transcript in which every agent tells everyone every private item (so that every judge has
something to ask about)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from localbench.benchmarks.asb.actions import COORDINATOR_SPEC, reply_spec
from localbench.benchmarks.asb.judges import judge_calls
from localbench.benchmarks.asb.scenario import Scenario
from localbench.benchmarks.asb.simulate import engine_for, settings_for
from localbench.serving.output import OutputSpec
from localbench.spec import RunSpec


def telling_everything(scenario: Scenario) -> list[dict[str, Any]]:
    """One message per agent, to every other participant, holding every private item's text."""
    ids = [a.id for a in scenario.agents] + [p.id for p in scenario.people]
    text = " ".join(it.text for it in scenario.items)
    return [{"sender": a.id, "recipients": [x for x in ids if x != a.id], "content": text, "index": i}
            for i, a in enumerate(scenario.agents)]


def preflight_outputs(spec: RunSpec, scenarios: Sequence[Scenario]) -> dict[str, list[OutputSpec]]:
    firsts = {engine_for(sc).engine: sc for sc in reversed(list(scenarios))}  # the first of each engine
    out: dict[str, list[OutputSpec]] = {"agent": [COORDINATOR_SPEC], "user_sim": [], "judge": []}
    for sc in firsts.values():
        chars = settings_for(spec, sc.category).message_max_chars
        out["agent"] += engine_for(sc).action_specs(sc, chars) + [reply_spec(chars)]
        out["user_sim"].append(reply_spec(chars))
        out["judge"] += [OutputSpec.from_schema(c.schema, name=c.judge)
                         for c in judge_calls(sc, telling_everything(sc), lambda messages: True)]
    return out
