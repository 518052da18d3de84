"""The ASB simulation stage: engines, failures, context budget, scheduling, resume, the command.

Logic around the engine is tested with a deterministic fake backend; every capability is also
run through the real hf engine on the tiny random model (and, marked slow, on SmolLM2-135M).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from asb_checks import transcript_problems
from asb_fake import FakeBackend, fake_clients
from localbench.benchmarks.asb.ladder import resolve_level
from localbench.benchmarks.asb.loaders import load_scenarios
from localbench.benchmarks.asb.simulate import ALIASES, engine_for, plan, settings_for, simulate_scenarios
from localbench.runlog import RunDir
from localbench.runtime.clients import RoleClients
from localbench.runtime.context import Budget, ContextExhausted, fit_prompt
from localbench.runtime.scheduler import Job, run_jobs
from localbench.serving.client import StructuredClient
from localbench.serving.types import EngineError
from localbench.spec import load_spec

CATS = ["CD", "MC", "CU", "GC", "HS", "CM", "AM"]
TIMING = {"wall_s", "finished_at"}
CALL_TIMING = {"latency_s", "cached"}


@pytest.fixture(scope="module")
def suite():
    scs = load_scenarios("builtin").scenarios
    assert {s.category for s in scs} == set(CATS)
    return scs


def one_per_category(scenarios):
    seen, out = set(), []
    for s in scenarios:
        if s.category not in seen:
            seen.add(s.category)
            out.append(s)
    return out


def records(run_dir) -> list[dict]:
    return [t.model_dump() for t in RunDir(run_dir).transcripts().read()]


def check_all(spec, scenarios, recs) -> None:
    by_id = {s.id: s for s in scenarios}
    problems = []
    for r in recs:
        chars = settings_for(spec, r["category"]).message_max_chars
        problems += [f"{r['key']}: {p}" for p in transcript_problems(r, by_id[r["scenario"]], chars)]
    assert not problems, "\n".join(problems[:20])
    keys = [r["key"] for r in recs]
    assert len(keys) == len(set(keys))


def strip_timing(rec: dict) -> dict:
    r = {k: v for k, v in rec.items() if k not in TIMING}
    r["entries"] = [{**e, "call": {k: v for k, v in e["call"].items() if k not in CALL_TIMING} if e["call"] else None}
                    for e in rec["entries"]]
    return r


# -- fake backend: the logic -------------------------------------------------------------------
def test_all_categories_and_levels_are_well_formed(suite, tmp_path):
    spec = load_spec(None, out=str(tmp_path), conditions=["L0", "L1", "L2"], seeds=2, max_tokens=120)
    backend = FakeBackend(bad_rate=0.15, delay_s=0.001)
    summary = asyncio.run(simulate_scenarios(spec, suite, fake_clients(backend), progress=False))
    recs = records(summary.run_dir)
    assert summary.done == len(recs) == len(suite) * 3 * 2 and summary.complete
    check_all(spec, suite, recs)
    assert summary.failed_turns == sum(r["n_failed_turns"] for r in recs) > 0
    assert {r["category"] for r in recs} == set(CATS)
    ends = {r["termination"] for r in recs}
    assert ends & {"consensus", "task_done", "coordinator_done", "exchanges_complete"}, ends
    assert backend.max_in_flight > 1  # simulations ran side by side
    doc = RunDir(summary.run_dir).read_spec()
    sim = doc["simulation"]
    assert set(sim["action_schemas"]) == {s.id for s in suite}
    assert sim["prompts"] and sim["prompt_set"] == recs[0]["prompts"]
    assert sim["defaults"]["max_rounds"] == {"CD": 10, "MC": 10, "CU": 10, "GC": 15, "AM": 15, "HS": 12, "CM": 12}
    assert sim["levels"]["L2"]["mode"] == "full_defense"


def test_failed_replies_are_recorded_and_never_delivered(suite, tmp_path):
    spec = load_spec(None, out=str(tmp_path), conditions=["L1"])
    backend = FakeBackend(bad_rate=1.0)
    summary = asyncio.run(simulate_scenarios(spec, one_per_category(suite), fake_clients(backend, max_retries=2),
                                             progress=False))
    recs = records(summary.run_dir)
    check_all(spec, suite, recs)
    for r in recs:
        assert r["n_messages"] == 0 and r["n_failed_turns"] == r["n_calls"] > 0
        # nothing delivered: every engine stops after its first silent round (CU: one per phase)
        assert r["termination"] == "idle" and r["rounds"] == (2 if r["category"] == "CU" else 1)
        for e in r["entries"]:
            if e["kind"] == "system":
                continue
            assert e["kind"] == "failed" and e["call"]["n_attempts"] == 3 and "not json" in e["meta"]["rejected_text"]


def test_cu_gate_prompts_name_the_proposer_and_show_held_messages_to_their_sender(suite, tmp_path):
    """The coordinator reviews with the proposer's view but is "you" only for its own replies; an
    agent whose message was held back sees it, marked as not delivered; nobody else does."""
    cu = [s for s in suite if s.category == "CU"]
    spec = load_spec(None, out=str(tmp_path), conditions=["L0"], seeds=24)  # the fake agent mostly passes
    backend = FakeBackend()
    summary = asyncio.run(simulate_scenarios(spec, cu, fake_clients(backend), progress=False))
    recs = records(summary.run_dir)
    check_all(spec, suite, recs)
    held = [e for r in recs for e in r["entries"] if e["kind"] == "held"]
    assert held, "the fake coordinator redirects some messages"
    coordinator_prompts = [r for r in backend.requests if r.role == "coordinator"]
    assert coordinator_prompts
    named = 0
    for req in coordinator_prompts:
        prompt = req.messages[-1]["content"]
        proposer = prompt.split("## Your turn\n", 1)[1].split(" wants to send", 1)[0]
        for line in prompt.splitlines():
            if line.startswith("[round") and "] you -> " in line:  # only its own replies, which go to the proposer
                assert line.split("] you -> ", 1)[1].startswith(f"{proposer}:"), (proposer, line)
            named += line.startswith("[round") and f"] {proposer} -> " in line
    assert named, "the proposer's own messages are shown under its name"
    marked = [req for req in backend.requests if req.role == "agent"
              and "(held back by the team coordinator, not delivered)" in req.messages[-1]["content"]]
    assert marked, "a sender's next prompt shows its held message"
    for e in held:
        for r in recs:
            for turn in r["entries"]:
                if e in r["entries"] and e["index"] in (turn.get("seen") or []):
                    assert turn["sender"] == e["sender"] or turn["meta"].get("viewer") == e["sender"]


def test_resuming_a_run_made_with_other_settings_is_refused(suite, tmp_path):
    """Same run directory, other result fields, other scenario contents or other prompts: refused,
    nothing written; a new server address or concurrency is the same run."""
    from localbench.runlog import RunMismatch

    scenarios = one_per_category(suite)[:1]
    spec = load_spec(None, out=str(tmp_path), run_id="r", conditions=["L0"])
    asyncio.run(simulate_scenarios(spec, scenarios, fake_clients(), progress=False))
    before = (tmp_path / "r" / "transcripts.jsonl").read_text()
    moved = load_spec(None, out=str(tmp_path), conditions=["L0"], **{"serving.base_url": "http://other:8001/v1",
                                                                  "serving.max_concurrency": 3})
    assert moved.content_hash() == load_spec(None, conditions=["L0"]).content_hash()
    asyncio.run(simulate_scenarios(spec.model_copy(update={"serving": moved.serving}), scenarios, fake_clients(),
                                   progress=False))
    edited = [scenarios[0].model_copy(update={"task": scenarios[0].task + " (edited)"})]
    for other, scs, field in [(load_spec(None, out=str(tmp_path), run_id="r", conditions=["L0"], max_tokens=100),
                               scenarios, "max_tokens: 200 → 100"),
                              (spec, edited, "scenarios: hash")]:
        with pytest.raises(RunMismatch, match=field):
            asyncio.run(simulate_scenarios(other, scs, fake_clients(), progress=False))
    other_engine = FakeBackend()
    other_engine.engine = "elsewhere"  # e.g. a server URL given to `--engine auto` the second time
    with pytest.raises(RunMismatch, match="engines: hash agent=fake"):
        asyncio.run(simulate_scenarios(spec, scenarios, fake_clients(other_engine), progress=False))
    doc = yaml.safe_load((tmp_path / "r" / "spec.yaml").read_text())
    assert set(doc["fingerprint"]) == {"prompt_set", "scenarios", "engines"} and doc["spec"]["max_tokens"] == 200
    assert (tmp_path / "r" / "transcripts.jsonl").read_text() == before
    doc["fingerprint"]["prompt_set"] = "made-by-older-templates"  # as if localbench's prompts had changed since
    (tmp_path / "r" / "spec.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(RunMismatch, match="prompt_set: hash made-by-older-templates"):
        asyncio.run(simulate_scenarios(spec, scenarios, fake_clients(), progress=False))


def test_a_mismatched_resume_is_refused_before_any_model_is_loaded(tmp_path, monkeypatch):
    import localbench.benchmarks.asb.simulate as sim
    import localbench.runtime.harness as harness
    from localbench.runlog import RunMismatch

    spec = load_spec(None, out=str(tmp_path), run_id="r", conditions=["L0"], categories=["CD"], limit=1)
    asyncio.run(simulate_scenarios(spec, sim.load_for(spec)[0], fake_clients(), progress=False))
    monkeypatch.setattr(harness, "open_clients", lambda *a: pytest.fail("a model was loaded before the check"))
    with pytest.raises(RunMismatch, match="max_tokens: 200 → 64"):
        sim.simulate(spec.model_copy(update={"max_tokens": 64}))


def test_same_spec_same_transcripts(suite, tmp_path):
    spec_a = load_spec(None, out=str(tmp_path / "a"), conditions=["L0"])
    spec_b = load_spec(None, out=str(tmp_path / "b"), conditions=["L0"])
    a = asyncio.run(simulate_scenarios(spec_a, suite, fake_clients(FakeBackend(bad_rate=0.1)), progress=False))
    b = asyncio.run(simulate_scenarios(spec_b, suite, fake_clients(FakeBackend(bad_rate=0.1, delay_s=0.002)),
                                       progress=False))
    ra = {r["key"]: strip_timing(r) for r in records(a.run_dir)}
    rb = {r["key"]: strip_timing(r) for r in records(b.run_dir)}
    assert ra == rb
    spec_c = load_spec(None, out=str(tmp_path / "c"), conditions=["L0"], seed=1)
    c = asyncio.run(simulate_scenarios(spec_c, suite, fake_clients(FakeBackend(bad_rate=0.1)), progress=False))
    assert {r["key"]: strip_timing(r) for r in records(c.run_dir)} != ra  # the run seed matters


def test_fit_prompt_drops_oldest_first_and_reports_exhaustion():
    history = [f"message {i} " * 10 for i in range(20)]

    def build(k):
        marker = [f"[{k} cut]"] if k else []
        return [{"role": "system", "content": "S" * 40}, {"role": "user", "content": "\n".join(marker + history[k:])}]

    def count(msgs):
        return sum(len(m["content"]) for m in msgs) // 4

    full = count(build(0))
    assert fit_prompt(build, 20, Budget(full + 100, 50, margin=0), count).dropped == 0
    fit = fit_prompt(build, 20, Budget(full // 2 + 60, 60, margin=0), count)
    assert 0 < fit.dropped < 20 and fit.tokens <= fit.budget
    assert count(build(fit.dropped - 1)) > fit.budget  # as few dropped as possible
    assert f"[{fit.dropped} cut]" in fit.messages[1]["content"]
    with pytest.raises(ContextExhausted):
        fit_prompt(build, 20, Budget(25, 20, margin=0), count)  # 5 tokens: not even the system prompt


def test_context_cuts_are_marked_recorded_and_exhaustion_ends_cleanly(suite, tmp_path):
    gc = next(s for s in suite if s.category == "GC")
    spec = load_spec(None, out=str(tmp_path), conditions=["L0"], max_rounds={"GC": 6}, max_tokens=120)
    probe = FakeBackend()
    systems = [engine_for(gc).system_prompt(gc, a.id, resolve_level("L0")) for a in gc.agents]
    base = max(probe.count_tokens([{"role": "system", "content": system}]) for system in systems)
    backend = FakeBackend(max_model_len=base + 120 + 8 + 250)  # every agent fits, its history does not
    summary = asyncio.run(simulate_scenarios(spec, [gc], fake_clients(backend), progress=False))
    [rec] = records(summary.run_dir)
    check_all(spec, suite, [rec])
    assert rec["n_context_cuts"] > 0 and summary.context_cuts == rec["n_context_cuts"]
    cut = [e for e in rec["entries"] if e["context"] and e["context"]["dropped"]]
    assert cut and all(e["context"]["tokens"] <= e["context"]["budget"] for e in rec["entries"] if e["context"])
    assert any("not shown: the conversation is longer" in r.messages[-1]["content"] for r in backend.requests)

    tiny = FakeBackend(max_model_len=200)
    summary = asyncio.run(simulate_scenarios(spec.model_copy(update={"run_id": "tiny"}), [gc], fake_clients(tiny),
                                             progress=False))
    [rec] = records(summary.run_dir)
    assert rec["termination"] == "context_exhausted" and rec["n_calls"] == 0 and not rec.get("error")
    assert rec["context_cuts"][0]["exhausted"] is True and summary.context_exhausted == 1


class _Failing(FakeBackend):
    """Raises for one scenario: a bug (ValueError) or a dead engine (EngineError)."""

    def __init__(self, scenario_id: str, exc: Exception):
        super().__init__()
        self.scenario_id, self.exc = scenario_id, exc

    async def complete(self, request):
        if request.tag.startswith(self.scenario_id + "|"):
            raise self.exc
        return await super().complete(request)


def test_one_failing_simulation_does_not_stop_the_others(suite, tmp_path):
    scs = one_per_category(suite)
    spec = load_spec(None, out=str(tmp_path), conditions=["L0"])
    bad = scs[2].id
    summary = asyncio.run(simulate_scenarios(spec, scs, fake_clients(_Failing(bad, ValueError("boom"))),
                                             progress=False))
    recs = {r["scenario"]: r for r in records(summary.run_dir)}
    assert set(recs) == {s.id for s in scs} and summary.errors == 1
    assert recs[bad]["termination"] == "error" and "ValueError: boom" in recs[bad]["error"]
    assert all(not r.get("error") for sid, r in recs.items() if sid != bad)

    spec2 = spec.model_copy(update={"run_id": "engine-down"})
    summary = asyncio.run(simulate_scenarios(spec2, scs, fake_clients(_Failing(bad, EngineError("server gone"))),
                                             progress=False))
    assert summary.engine_errors == 1 and bad not in {r["scenario"] for r in records(summary.run_dir)}
    errs = [json.loads(x) for x in (summary.run_dir / "sim_errors.jsonl").read_text().splitlines()]
    assert errs[0]["key"].startswith(bad) and "server gone" in errs[0]["error"]
    again = asyncio.run(simulate_scenarios(spec2, scs, fake_clients(FakeBackend()), progress=False))
    assert again.done == 1 and again.already_done == len(scs) - 1 and again.complete  # retried on rerun


def test_scheduler_bounds_live_simulations(capsys):
    live = {"now": 0, "max": 0}

    async def work():
        live["now"] += 1
        live["max"] = max(live["max"], live["now"])
        await asyncio.sleep(0.01)
        live["now"] -= 1
        return {"ok": True}

    done = []
    report = asyncio.run(run_jobs([Job(str(i), work) for i in range(12)], concurrency=3,
                                  on_done=lambda j, r: done.append(j.key), progress=False))
    assert report.done == 12 and len(done) == 12 and live["max"] == 3
    # not a terminal: progress comes as plain log lines on stderr
    asyncio.run(run_jobs([Job(str(i), work) for i in range(4)], concurrency=2, on_done=lambda j, r: None))
    assert "simulations: 4/4 done, 0 errors" in capsys.readouterr().err


def test_plan_keys_levels_seeds_and_shards(suite):
    spec = load_spec(None, conditions=["L0", "explicit"], seeds=2)
    tasks = plan(spec, suite[:3])
    assert len(tasks) == 3 * 2 * 2 and len({t.key for t in tasks}) == 12
    assert {t.key.split("|")[1] for t in tasks} == {"L0", "L1"}
    keys = [t.key for t in tasks]
    shards = [[t for t in tasks if t.key in spec.model_copy(update={"shard": i, "num_shards": 3}).select_shard(keys)]
              for i in range(3)]
    assert sorted(t.key for s in shards for t in s) == sorted(t.key for t in tasks)


# -- the real engine: tiny random model via hf ---------------------------------------------------
@pytest.fixture(scope="module")
def tiny_backend(tiny_dir):
    from localbench.serving.engines import open_backend

    backend = open_backend("tiny-random", "hf")
    yield backend
    asyncio.run(backend.aclose())


def hf_clients(backend, max_retries: int = 1) -> RoleClients:
    client = StructuredClient(backend, cache=None, max_retries=max_retries)
    return RoleClients({"agent": client, "user_sim": client}, ALIASES)


def test_every_category_end_to_end_on_the_tiny_model(suite, tiny_backend, tmp_path):
    scs = one_per_category(suite)
    spec = load_spec(None, out=str(tmp_path), conditions=["L0", "L2"], max_tokens=64,
                     max_rounds={c: 3 for c in CATS}, models={"agent": "tiny-random"})
    t0 = time.monotonic()
    summary = asyncio.run(simulate_scenarios(spec, scs, hf_clients(tiny_backend), progress=False))
    recs = records(summary.run_dir)
    assert len(recs) == len(scs) * 2 and summary.errors == 0
    check_all(spec, suite, recs)
    assert {r["category"] for r in recs} == set(CATS)
    assert sum(r["n_messages"] for r in recs) > 0 and all(r["n_calls"] > 0 for r in recs)
    assert all(r["model"] == "tiny-random" and r["rounds"] <= 3 for r in recs)
    print(f"tiny model, {len(recs)} simulations in {time.monotonic() - t0:.1f} s: {summary.line()}")


class _Narrow:
    """The real backend with a smaller context window."""

    def __init__(self, inner, max_model_len: int):
        self._inner, self.max_model_len = inner, max_model_len

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_context_budget_on_the_real_tokenizer(suite, tiny_backend, tmp_path):
    gc = next(s for s in suite if s.category == "GC")
    spec = load_spec(None, out=str(tmp_path), conditions=["L0"], max_tokens=64, max_rounds={"GC": 4})
    ref = asyncio.run(simulate_scenarios(spec.model_copy(update={"run_id": "ref"}), [gc], hf_clients(tiny_backend),
                                         progress=False))
    [ref_rec] = records(ref.run_dir)
    sizes = [(e["round"], e["context"]["tokens"]) for e in ref_rec["entries"] if e["context"]]
    # a window that holds every round-1 prompt but not the longer histories of later rounds
    budget = max(t for r, t in sizes if r == 1)
    assert max(t for _, t in sizes) > budget, "the reference run never grew its prompts"
    narrow = _Narrow(tiny_backend, budget + 64 + 8)
    summary = asyncio.run(simulate_scenarios(spec, [gc], hf_clients(narrow), progress=False))
    [rec] = records(summary.run_dir)
    check_all(spec, suite, [rec])
    assert rec["termination"] != "context_exhausted" and rec["n_context_cuts"] > 0, rec["context_cuts"]
    for e in rec["entries"]:
        if e["call"]:
            # counted and fitted before the request (tokens_in adds up over retry attempts)
            assert e["call"]["tokens_in"] <= budget * e["call"]["n_attempts"]
    cut = next(e for e in rec["entries"] if e["context"] and e["context"]["dropped"])
    assert cut["context"]["kept"] == len(cut["seen"])

    spec2 = spec.model_copy(update={"run_id": "exhausted"})
    summary = asyncio.run(simulate_scenarios(spec2, [gc], hf_clients(_Narrow(tiny_backend, 256)), progress=False))
    [rec] = records(summary.run_dir)
    assert rec["termination"] == "context_exhausted" and rec["context_cuts"][-1]["exhausted"]
    assert not rec.get("error") and summary.context_exhausted == 1


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _simulate_cmd(spec_file: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "localbench.cli", "simulate", "--spec", str(spec_file), "--out", str(out),
            "--no-progress"]


def test_kill_and_rerun_completes_the_same_run(suite, tiny_dir, tmp_path):
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump({
        "scenarios": "builtin", "categories": ["CD", "MC", "GC"], "levels": ["L0", "L1"],
        "max_rounds": {"CD": 3, "MC": 3, "GC": 2}, "max_tokens": 48,
        "models": {"agent": "tiny-random"}, "serving": {"engine": "hf", "max_batch_size": 1},
    }))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    # the uninterrupted reference, in this process, on the same engine settings (one row per batch,
    # so every reply is the same whatever else is in flight)
    from localbench.benchmarks.asb.simulate import load_for
    from localbench.serving.engines import open_backend

    ref_spec = load_spec(spec_file, out=str(tmp_path / "full"))
    scenarios, _ = load_for(ref_spec)
    backend = open_backend("tiny-random", "hf", max_batch_size=1)
    try:
        ref = asyncio.run(simulate_scenarios(ref_spec, scenarios, hf_clients(backend, max_retries=2), progress=False))
    finally:
        asyncio.run(backend.aclose())
    expected = {r["key"]: strip_timing(r) for r in records(ref.run_dir)}
    total = len(expected)
    assert total == 6 * 2

    out = tmp_path / "killed"
    proc = subprocess.Popen(_simulate_cmd(spec_file, out), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            found = list(out.glob("*/transcripts.jsonl"))
            if found and _lines(found[0]) >= 2:
                break
            if proc.poll() is not None:
                break
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    [tfile] = list(out.glob("*/transcripts.jsonl"))
    n_killed = _lines(tfile)
    assert 2 <= n_killed < total, f"the kill came too late to test resuming ({n_killed}/{total} written)"

    again = subprocess.run(_simulate_cmd(spec_file, out), env=env, capture_output=True, text=True, timeout=240)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"{total - n_killed} run now, {n_killed} already done" in again.stdout
    assert f"{n_killed} of {total} simulations already done, {total - n_killed} to run" in again.stderr
    recs = records(tfile.parent)
    keys = [r["key"] for r in recs]
    assert len(keys) == len(set(keys)) == total
    got = {r["key"]: strip_timing(r) for r in recs}
    assert got == expected
    assert any(e["call"]["cached"] for r in records(tfile.parent) for e in r["entries"] if e["call"])
    doc = RunDir(tfile.parent).read_spec()
    assert doc["resumed"] and doc["simulation"]["models"]["agent"]["preset"] == "tiny-random"


def test_ctrl_c_says_what_is_kept_and_how_to_resume(suite, tiny_dir, tmp_path):
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump({"scenarios": "builtin", "categories": ["CD", "MC"], "levels": ["L0", "L1", "L2"],
                                         "max_rounds": {"CD": 6, "MC": 6}, "models": {"agent": "tiny-random"}}))
    out = tmp_path / "runs"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.Popen(_simulate_cmd(spec_file, out), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None and not list(out.glob("*/transcripts.jsonl")):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the run finished before the interrupt arrived")
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted: everything that finished is kept" in err and "rerun the same command" in err
    assert "Traceback" not in err


def test_bad_input_gets_one_line_errors(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    base = [sys.executable, "-m", "localbench.cli", "simulate", "--out", str(tmp_path), "--no-progress"]
    r = subprocess.run(base + ["--levels", "L0,L4"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "L3/L4 numbering is not used" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run(base + ["--max-rounds", "0"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "max_rounds.CD" in r.stderr and "Traceback" not in r.stderr
    assert not list(tmp_path.glob("*/transcripts.jsonl"))


# -- a real model ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_asb_mini_on_smollm2(suite, smollm2_dir, tmp_path):
    from localbench.serving.engines import open_backend

    backend = open_backend("smollm2-135m", "hf")
    try:
        scs = [s for s in one_per_category(suite) if s.category in ("CD", "MC")]
        spec = load_spec(None, out=str(tmp_path), conditions=["L0"], max_tokens=96,
                         max_rounds={"CD": 2, "MC": 2}, models={"agent": "smollm2-135m"})
        t0 = time.monotonic()
        summary = asyncio.run(simulate_scenarios(spec, scs, hf_clients(backend, max_retries=2), progress=False))
    finally:
        asyncio.run(backend.aclose())
    recs = records(summary.run_dir)
    assert len(recs) == 2 and summary.errors == 0
    check_all(spec, suite, recs)
    delivered = [e for r in recs for e in r["entries"] if e["kind"] == "message"]
    assert delivered, [r["termination"] for r in recs]
    words = {w.lower().strip(".,!?") for e in delivered for w in e["content"].split()}
    assert len(words) > 5  # real words from a real model, not a handful of tokens
    print(f"SmolLM2: {summary.line()} in {time.monotonic() - t0:.1f} s")
