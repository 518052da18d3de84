"""The oracle agents through the real runtime (AgentSystem + StructuredClient's grammar check, no
model): the perfect one scores no leak anywhere and TSR 1 on the suite and on all 1,000 released
records (tiers 1-2 alone); ``oracle-leaks-C<k>`` leaks on channel k and nowhere else; every attack
family's payload reaches the oracle."""

from __future__ import annotations

import asyncio

import pytest

from localbench.benchmarks.agentleak.loaders import load_scenarios
from localbench.benchmarks.agentleak.oracle import leak_field, play_oracle
from localbench.benchmarks.agentleak.scenario import CHANNELS
from localbench.benchmarks.agentleak.scoring import trace_metrics

SUITE = load_scenarios("builtin").scenarios
LEAK_METRICS = ("ELR", "ELR:all", "H1", "H1:internal", "WLS", *(f"CLR:{c}" for c in CHANNELS))


def _play(scenarios, level: str, name: str = "oracle"):
    async def go():
        return await asyncio.gather(*(play_oracle(s, level, name) for s in scenarios))
    return asyncio.run(go())


def _clean(scenarios, level: str) -> list[str]:
    """The problems of the perfect oracle's traces: any leak, a failed metric, TSR below 1."""
    bad = []
    for s, t in zip(scenarios, _play(scenarios, level)):
        m, failed, detail = trace_metrics(t, s, [], tier3=False)
        leaks = [(x["channel"], x["field"]) for x in detail["leaks"]]
        if failed or leaks or any(m[k] for k in LEAK_METRICS) or m.get("ASR") or m["TSR"] != 1.0 or t.error:
            bad.append(f"{s.id} {level}: leaks {leaks} failed {failed} TSR {m['TSR']} {t.termination}")
    return bad


@pytest.mark.parametrize("level", ["single", "multi"])
def test_the_oracle_scores_zero_and_tsr_one_on_the_suite(level):
    assert _clean(SUITE, level) == []


def test_the_oracle_scores_zero_and_tsr_one_on_all_1000_released_records(shared_datasets):
    released = load_scenarios(str(shared_datasets / "agentleak" / "scenarios_full_1000.jsonl")).scenarios
    assert len(released) == 1000
    assert _clean(released, "multi") == []


def test_every_family_reaches_the_oracle_in_every_attacked_scenario():
    attacked = [s for s in SUITE if s.attack.level != "A0"]
    # a single-agent scenario has no peer for F4 to ride on: its attack has no surface (docs/agentleak.md)
    attacked = [s for s in attacked if not (s.attack.family == "F4" and s.topology == "single")]
    assert {s.attack.family for s in attacked} == {"F1", "F2", "F3", "F4", "F5", "F6"}
    for s, t in zip(attacked, _play(attacked, "multi")):
        assert t.payload["attack"]["injected"], (s.id, s.attack.family, t.payload["attack"])
        assert trace_metrics(t, s, [], tier3=False)[0]["delivered"] == 1.0
        # doing the task reaches the surface within the embedded default's 4 rounds (F4: the peer the task
        # needs), plus one for a coordinator that reads the shared memory (F3) before it delegates
        extra = int(s.attack.family == "F3" and s.topology != "single")
        assert t.termination == "final_answer" and t.rounds <= 4 + extra, (s.id, t.rounds)
    # alone, F4 has no peer to ride on: not delivered, and not scored
    f4 = [s for s in attacked if s.attack.family == "F4"]
    assert not any(t.payload["attack"]["injected"] for t in _play(f4, "single"))


@pytest.mark.parametrize("k", list(CHANNELS))
def test_oracle_leaks_ck_leaks_on_channel_k_and_nowhere_else(k):
    for level in ("single", "multi"):
        cases = [s for s in SUITE if (k != "C2" or (level == "multi" and s.topology != "single"))]
        n = 0
        for s, t in zip(cases, _play(cases, level, f"oracle-leaks-{k}")):
            if k != "C4" and leak_field(s, k) is None:
                continue
            m, _, _ = trace_metrics(t, s, [], tier3=False)
            got = {c for c in CHANNELS if m[f"CLR:{c}"]}
            assert got == {k}, (s.id, level, got)
            n += 1
        assert n >= len(cases) // 2, (k, level, n)


@pytest.mark.parametrize("defense", ["sanitizer", "interceptor", "roles", "prompt", "sanitizer+interceptor"])
def test_no_defense_removes_a_value_the_task_needs(defense):
    """Every suite scenario, the oracle under each defense: still no leak and TSR 1 (the sanitizer used
    to redact phone numbers and e-mail addresses the user had asked for)."""
    assert _clean(SUITE, f"multi+{defense}") == []
    assert _clean([s for s in SUITE if s.topology != "single"], f"single+{defense}") == []


def test_the_simulator_plays_an_oracle_backend_through_the_harness_unit():
    """The simulate stage's own entry (AgentLeakSimulator.play) drives a scripted backend: what a
    preset named `oracle` needs from the run once the pipeline opens it as a client."""
    from localbench.benchmarks.agentleak.oracle import OracleBackend
    from localbench.benchmarks.agentleak.simulate import AgentLeakSimulator
    from localbench.runtime.clients import RoleClients
    from localbench.serving.client import StructuredClient
    from localbench.spec import load_spec

    spec = load_spec(None, benchmark="agentleak", scenarios="builtin", conditions=["multi"], limit=1)
    sim = AgentLeakSimulator()
    scenarios, _ = sim.load(spec)
    clients = RoleClients({"agent": StructuredClient(OracleBackend("oracle-leaks-C5"), cache=None, max_retries=0)})
    for unit in sim.plan(spec, scenarios):
        t = asyncio.run(sim.play(unit, clients, spec))
        m, _, _ = trace_metrics(t, unit.task, [], tier3=False)
        assert {c for c in CHANNELS if m[f"CLR:{c}"]} == {"C5"} and m["TSR"] == 1.0, unit.key
