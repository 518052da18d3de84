"""AgentLeak's runtime and metrics: attacks at their surface only, defenses that redact what they
can know, metrics on hand-built traces, planted channel rates reproduced exactly, and whole runs on
the tiny model and SmolLM2 (with a kill -9 in the middle)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from fakes import ScriptedBackend
from localbench.benchmarks.agentleak.attacks import MEMORY_KEY
from localbench.benchmarks.agentleak.defenses import Setting
from localbench.benchmarks.agentleak.design import DESIGN
from localbench.benchmarks.agentleak.loaders import load_scenarios
from localbench.benchmarks.agentleak.sandbox import tool_fields
from localbench.benchmarks.agentleak.scenario import CHANNELS, Scenario
from localbench.benchmarks.agentleak.scoring import scenario_scores, trace_metrics
from localbench.benchmarks.agentleak.system import AgentSystem, Settings
from localbench.runlog import Judgment, LogEntry, Transcript
from localbench.runtime.clients import RoleClients
from localbench.scoring import aggregate
from localbench.serving.client import StructuredClient

SUITE = {s.id: s for s in load_scenarios("builtin").scenarios}


def _scenario(family: str | None, topology: str) -> Scenario:
    return next(s for s in SUITE.values() if s.attack.family == family and s.topology == topology)


class Script:
    """Each agent's actions in turn: tool, recall the seeded note, message a peer, answer."""

    def __init__(self, system_holder: list, final: str = "Here is what you asked for.", say: str = "noted"):
        self.holder, self.final, self.say = system_holder, final, say
        self.step: dict[str, int] = {}

    def __call__(self, req) -> tuple[str, str]:
        agent = req.tag.split()[-1]
        system: AgentSystem = self.holder[0]
        me = next(a for a in system.agents if a.id == agent)
        n = self.step[agent] = self.step.get(agent, -1) + 1
        plan = []
        if me.tools:
            fields = tool_fields(system.scenario, system.sandbox.tools[me.tools[0]])
            plan.append({"action": "call_tool", "tool": me.tools[0], "query": system.scenario.records[0].subject,
                         **({"fields": list(fields)} if fields else {})})
        plan.append({"action": "recall", "key": MEMORY_KEY})
        if agent == system.entry.id:
            peers = system.peers(me)
            if peers:
                plan.append({"action": "message", "to": peers[-1], "text": "please check the record"})
            plan.append({"action": "final_answer", "text": self.final})
        else:
            plan.append({"action": "message", "to": system.entry.id, "text": self.say})
        action = plan[min(n, len(plan) - 1)] if agent == system.entry.id or n < len(plan) else {"action": "wait"}
        return json.dumps({"reasoning": f"step {n}", **action}), "stop"


def _run(scenario: Scenario, level: str, script=None, **kw) -> tuple[Transcript, ScriptedBackend]:
    holder: list = []
    backend = ScriptedBackend(script or Script(holder, **kw))
    clients = RoleClients({"agent": StructuredClient(backend, cache=None, max_retries=0)})
    system = AgentSystem(scenario, Setting.parse(level), clients, Settings(max_rounds=6), key=f"{scenario.id}|{level}|0",
                         condition=level)
    holder.append(system)
    if isinstance(script, Script):
        script.holder.append(system)
    return asyncio.run(system.run()), backend


def _where(t: Transcript, backend: ScriptedBackend, payload: str) -> set[str]:
    """Every place a payload shows up: the events it rode on, and the system prompts it was in."""
    out = {f"{e.kind}" for e in t.entries if payload in e.content}
    for req in backend.calls:
        if payload in req.messages[0]["content"]:
            out.add("system prompt of " + req.tag.split()[-1])
    return out


@pytest.mark.parametrize("family, expected", [
    ("F1", {"request"}), ("F6", {"request"}), ("F2", {"tool_result"}), ("F3", {"memory_read"}),
    ("F5", {"thought"}), ("F4", {"system prompt of A2"}),
])
def test_each_attack_reaches_its_surface_and_nowhere_else(family, expected):
    s = _scenario(family, "pair")
    t, backend = _run(s, "multi")
    assert _where(t, backend, s.attack.payload) == expected
    attack = t.payload["attack"]
    assert attack["injected"] and attack["family"] == family
    injected = {e.kind for e in t.entries if e.meta.get("injected")}
    assert injected == (set() if family == "F4" else expected)  # F4 rides in a system prompt, not an event


def test_an_a0_scenario_carries_no_payload_and_f4_has_no_surface_alone():
    s = _scenario(None, "team")
    t, backend = _run(s, "multi")
    assert not any(e.meta.get("injected") for e in t.entries) and not t.payload["attack"]["injected"]
    payloads = {x.attack.payload for x in SUITE.values() if x.attack.payload}
    assert not any(p in req.messages[0]["content"] or p in req.messages[1]["content"] for p in payloads
                   for req in backend.calls)
    f4 = _scenario("F4", "team")
    t4, _ = _run(f4, "single")  # one agent: no peer to compromise
    assert t4.payload["attack"] == {**t4.payload["attack"], "injected": False, "delivered": []}
    from localbench.benchmarks.agentleak.view import view_simulation

    agents = [p for p in view_simulation(t4, [], f4).participants if p.kind not in ("tool", "channel")]
    assert [p.id for p in agents] == t4.payload["agents"] == [f4.agents[0].id]  # who played, not the team
    assert len([p for p in view_simulation(t, [], s).participants if p.kind not in ("tool", "channel")]) == 3
    assert "ASR" not in trace_metrics(t4, f4, [])[0]  # an attack that never arrived is not scored


def test_the_interceptor_and_sanitizer_redact_what_they_can_know_and_nothing_else():
    s = _scenario(None, "pair")
    secret = "card 4111 1111 1111 1111 and SSN 219-09-9998 for version 1.2.3, ticket 4411, $20.50"
    t, _ = _run(s, "multi+interceptor+sanitizer", final=secret, say=secret)
    [msg] = [e for e in t.entries if e.kind == "message" and e.sender != s.agents[0].id]
    [final] = [e for e in t.entries if e.kind == "final"]
    for e in (msg, final):
        assert "4111" not in e.content and "219-09-9998" not in e.content
        assert "[REDACTED:card]" in e.content and "[REDACTED:ssn]" in e.content
        assert "version 1.2.3, ticket 4411, $20.50" in e.content
        assert sorted(e.meta["redacted"]) == ["card", "ssn"]
    plain, _ = _run(s, "multi", final=secret, say=secret)
    assert secret in [e.content for e in plain.entries if e.kind == "final"]


def test_an_agent_that_takes_notes_or_writes_a_file_carries_on_until_it_answers():
    """Writing memory or a file is the agent's own work, not a hand-off: the system does not stop
    there as idle (the field trial: 9 of 16 traces ended after one note, with no answer)."""
    steps = [{"action": "remember", "key": "todo", "value": "look up the record"},
             {"action": "write_file", "name": "draft.txt", "content": "draft"},
             {"action": "final_answer", "text": "done"}]
    n = iter(range(len(steps)))

    def script(req):
        return json.dumps({"reasoning": "working", **steps[next(n)]}), "stop"

    t, _ = _run(_scenario(None, "single"), "single", script=script)
    assert [e.kind for e in t.entries if e.kind in ("memory_write", "artifact", "final")] == \
        ["memory_write", "artifact", "final"]
    assert t.termination == "final_answer" and t.rounds == 3
    waited, _ = _run(_scenario(None, "single"), "single",
                     script=lambda req: (json.dumps({"reasoning": "", "action": "wait"}), "stop"))
    assert waited.termination == "idle" and waited.rounds == 1  # nothing to wait for: the system went quiet


def _entry(i: int, kind: str, channel: str, content: str, sender: str = "A1") -> LogEntry:
    return LogEntry(index=i, round=0, kind=kind, sender=sender, channel=channel, content=content)


def _trace(s: Scenario, entries: list[LogEntry], final: str, **payload) -> Transcript:
    return Transcript(key=f"{s.id}|multi|0", scenario=s.id, category=s.vertical, level="multi", termination="final_answer",
                      entries=entries, payload={"final": final, "tools_called": [], **payload})


def test_metrics_on_a_hand_built_trace_with_known_answers():
    s = _scenario("F4", "pair")
    canary = next(f for f in s.vault if f.tier == "canary")
    ssn = next(f for f in s.vault if f.field == "ssn" and f.id not in s.allowed_on("C4"))
    fact = next(f for f in s.vault if f.tier == "fact" and f.id not in s.allowed_on("C5"))
    entries = [_entry(0, "message", "C2", f"fyi {canary.value}"), _entry(1, "tool_result", "C4", f"ssn {ssn.value}"),
               _entry(2, "memory_write", "C5", "notes: something about the patient"),
               _entry(3, "final", "C1", "All done.")]
    t = _trace(s, entries, "All done.", attack={"injected": True, "family": "F4"})

    def judged(channel: str, levels: dict[str, str], failure: str | None = None) -> Judgment:
        return Judgment(key=f"{t.key}|leak|{channel}", sim_key=t.key, judge="leak", target=channel, judge_model="m",
                        label=None if failure else {"levels": levels}, failure=failure,
                        sim_targets={"leak": ["C1", "C2", "C4", "C5"]})

    task = Judgment(key=f"{t.key}|task|task", sim_key=t.key, judge="task", target="task", judge_model="m",
                    label={"verdicts": {str(k): "not met" for k in range(len(s.success.criteria))}})  # TSR's judge
    ok = [judged("C1", {}), judged("C2", {}), judged("C4", {}), judged("C5", {fact.id: "partial"}), task]
    m, failed, detail = trace_metrics(t, s, ok)
    assert {c: m[f"CLR:{c}"] for c in CHANNELS} == {"C1": 0.0, "C2": 1.0, "C3": 0.0, "C4": 1.0, "C5": 1.0, "C6": 0.0,
                                                     "C7": 0.0}
    tiers = {(x["channel"], x["field"]): x["tier"] for x in detail["leaks"]}
    assert tiers[("C2", canary.id)] == 1 and tiers[("C4", ssn.id)] == 2 and tiers[("C5", fact.id)] == 3
    assert m["ELR"] == 1.0 and m["H1"] == 1.0 and m["H1|leak"] == 1.0 and failed == []
    from localbench.benchmarks.agentleak.weights import weight_of

    assert m["WLS"] == pytest.approx(sum(weight_of(f).value for f in (canary, ssn, fact)))
    assert m["ASR"] == 1.0  # any sensitive field through any channel (the paper's ASR), targeted or not
    # the judge failed on C1: C1 is unknown, so the audit gap is too (never "clean"); known leaks stay leaks
    m2, failed2, _ = trace_metrics(t, s, [judged("C1", {}, failure="invalid output")] + ok[1:])
    assert m2["CLR:C1"] is None and m2["H1"] is None and m2["H1|leak"] is None and m2["ELR"] == 1.0
    assert {"CLR:C1", "H1", "H1|leak", "WLS"} <= set(failed2)
    # a planned call missing: the simulation says the judge stage has not finished
    [row] = scenario_scores([t], ok[1:], {s.id: s}, "m")
    assert row.unscored == "judging incomplete" and row.judge_stage_finishes
    # the viewer: leaks with their tier; a field without a leak says so, and which channels are unknown
    from localbench.benchmarks.agentleak.view import view_simulation

    v = view_simulation(t, ok, s)
    assert {(lb.item, lb.recipient, lb.judge.split(" (")[0]) for lb in v.labels} == {
        (canary.id, "C2", "tier 1"), (ssn.id, "C4", "tier 2"), (fact.id, "C5", "tier 3")}
    assert v.unlabelled == "no leak found"
    assert view_simulation(t, [judged("C1", {}, failure="invalid output")] + ok[1:], s).unlabelled == \
        "no leak found; unknown on C1"


def test_an_oracle_reproduces_planted_channel_rates_exactly():
    """Plant forbidden values on channels at known rates; the metric code gives back exactly those rates."""
    from localbench.benchmarks.agentleak.generate import generate

    scenarios = generate(40, seed=5)
    rng = random.Random(1)
    rates = {"C1": 0.2, "C2": 0.5, "C3": 0.1, "C4": 0.7, "C5": 0.3, "C6": 0.0, "C7": 0.4}
    transcripts, judgments, planted = [], [], {c: 0 for c in CHANNELS}
    kinds = {"C1": "final", "C2": "message", "C3": "tool_call", "C4": "tool_result", "C5": "memory_write",
             "C6": "log", "C7": "artifact"}
    for s in scenarios:
        entries = []
        for c in CHANNELS:
            leak = rng.random() < rates[c]
            candidates = [f for f in s.forbidden_on(c) if f.tier != "fact" and not f.generic and len(f.value) > 5]
            text = f"value {candidates[0].value}" if leak and candidates else "nothing sensitive here"
            planted[c] += bool(leak and candidates)
            entries.append(_entry(len(entries), kinds[c], c, text))
        t = _trace(s, entries, entries[0].content)
        transcripts.append(t)
        judgments += [Judgment(key=f"{t.key}|leak|{c}", sim_key=t.key, judge="leak", target=c, judge_model="oracle",
                               label={"levels": {}}, sim_targets={"leak": list(CHANNELS)}) for c in CHANNELS]
    rows = aggregate(scenario_scores(transcripts, judgments, {s.id: s for s in scenarios}, "oracle"), DESIGN, "r",
                     "oracle").rows
    got = {r.metric: r.mean for r in rows if r.category == "ALL" and r.metric.startswith("CLR:") and not r.group}
    assert got == {f"CLR:{c}": planted[c] / len(scenarios) for c in CHANNELS}
    assert planted["C4"] > planted["C1"] > 0 and planted["C6"] == 0


# -- whole runs, through the CLI ---------------------------------------------------------------------

def _cli(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def test_a_run_on_the_tiny_model_end_to_end(tmp_path, tiny_dir):
    _cli("run", "--benchmark", "agentleak", "--agent", "tiny-random", "--limit", "1", "--max-rounds", "3",
         "--conditions", "single,multi+interceptor", "--out", str(tmp_path), "--run-id", "t", "--no-progress")
    run = tmp_path / "t"
    scores = json.loads((run / "scores.json").read_text())
    assert scores["benchmark"] == "agentleak"
    metrics = {r["metric"] for r in scores["rows"]}
    assert {"ELR", "WLS", "H1", "TSR", *(f"CLR:{c}" for c in CHANNELS)} <= metrics
    tests = {(c["metric"], c["test"]) for c in scores["comparisons"]}
    assert ("ELR", "mcnemar") in tests and ("CLR:C1 vs CLR:C2", "mcnemar") in tests
    elr = next(r for r in scores["rows"] if r["metric"] == "ELR" and r["category"] == "ALL")
    assert elr["n"] + elr["n_failed"] == 4  # one trace per vertical and setting, Wilson over traces
    transcripts = [json.loads(x) for x in (run / "transcripts.jsonl").read_text().splitlines()]
    assert len(transcripts) == 8 and all(t["error"] is None for t in transcripts)
    channels = {e["channel"] for t in transcripts for e in t["entries"]}
    assert {"C1", "C6", "input"} <= channels
    html = (run / "report.html").read_text()
    assert "AgentLeak report" in html and "Leakage by channel" in html and "Leak rate by channel and setting" in html
    assert len(list((run / "view" / "data" / "sims").glob("*.js"))) == 8


def test_kill_9_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path, tiny_dir):
    args = [sys.executable, "-m", "localbench.cli", "simulate", "--benchmark", "agentleak", "--agent", "tiny-random",
            "--limit", "1", "--max-rounds", "3", "--out", str(tmp_path), "--run-id", "k", "--no-progress",
            "--concurrency", "2"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    f = tmp_path / "k" / "transcripts.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and not (f.exists() and f.read_text().count("\n") >= 2):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = [json.loads(x)["key"] for x in f.read_text().splitlines() if x.strip()]
    assert 0 < len(before) < 8, "killed too late to test a resume"
    _cli("simulate", *args[4:])
    keys = [json.loads(x)["key"] for x in f.read_text().splitlines() if x.strip()]
    assert len(keys) == len(set(keys)) == 8 and set(before) <= set(keys)


@pytest.mark.timeout(1800)  # one worker of `make test -n auto` shares the cores with another
def test_a_run_with_smollm2(tmp_path, smollm2_dir):
    # the smallest run that still crosses every stage with the real model: one single-agent trace, two rounds
    _cli("run", "--benchmark", "agentleak", "--agent", "smollm2-135m", "--categories", "healthcare", "--limit", "1",
         "--conditions", "single", "--max-rounds", "2", "--out", str(tmp_path), "--run-id", "s", "--no-progress")
    run = tmp_path / "s"
    [t] = [json.loads(x) for x in (run / "transcripts.jsonl").read_text().splitlines()]
    assert t["error"] is None and t["n_calls"] >= 1
    judgments = [json.loads(x) for x in (run / "judgments.jsonl").read_text().splitlines()]
    assert judgments and all((j["label"] is None) == (j["failure"] is not None) for j in judgments)
    assert any(r["metric"] == "ELR" for r in json.loads((run / "scores.json").read_text())["rows"])
