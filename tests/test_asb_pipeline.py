"""`localbench run` end to end (simulate → judge → score → report) and the judges' contracts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localbench.benchmarks.asb.loaders import load_scenarios
from localbench.benchmarks.asb.metrics import HEADLINE

CATS = "CD,MC,CU,GC,HS,CM,AM"


def _run_cli(*args, env=None, timeout=900):
    return subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_dir):
    out = tmp_path_factory.mktemp("runs")
    r = _run_cli("run", "--agent", "tiny-random", "--engine", "hf", "--categories", CATS, "--conditions", "L0,L1,L2",
                 "--limit", "1", "--max-rounds", "2", "--max-tokens", "200", "--out", str(out), "--run-id", "tiny")
    assert r.returncode == 0, r.stderr[-3000:]  # 200-token turns: what `simulate` without --spec uses too
    return out / "tiny"


def _jsonl(p: Path):
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()]


def test_run_writes_every_artifact(tiny_run):
    for f in ("spec.yaml", "transcripts.jsonl", "judgments.jsonl", "scores.json", "scenario_scores.jsonl",
              "report.html", "report.md"):
        assert (tiny_run / f).stat().st_size > 0, f
    assert len(_jsonl(tiny_run / "transcripts.jsonl")) == 7 * 3
    assert list((tiny_run / "figures").glob("*.png"))


def test_every_item_labelled_and_judgments_schema_valid(tiny_run):
    scen = {s.id: s for s in load_scenarios("builtin", limit=1).scenarios}
    judgments = _jsonl(tiny_run / "judgments.jsonl")
    assert len({j["key"] for j in judgments}) == len(judgments)  # no duplicates
    for j in judgments:
        assert j["failure"] is None or j["label"] is None
        if j["judge"] == "privacy" and j["label"]:
            owner = j["target"].split("#")[0]
            items = scen[j["scenario"]].items if owner == "all" else scen[j["scenario"]].items_of(owner)
            assert set(j["label"]["levels"]) == {it.id for it in items}
            assert set(j["label"]["levels"].values()) <= {"none", "partial", "full"}
    by_sim = {}
    for j in judgments:
        by_sim.setdefault(j["sim_key"], set()).add(j["judge"])
    for t in _jsonl(tiny_run / "transcripts.jsonl"):
        assert {"task", "behaviour"} <= by_sim[t["key"]]
        assert by_sim[t["key"]] & {"privacy", "privacy_pairs"}


def test_scores_cover_every_category_and_level(tiny_run):
    scores = json.loads((tiny_run / "scores.json").read_text())
    seen = {(r["metric"], r["category"], r["condition"]) for r in scores["rows"]}
    for cat, metric in HEADLINE.items():
        for lv in ("L0", "L1", "L2"):
            assert (metric, cat, lv) in seen or any(
                r["metric"] == metric and r["category"] == cat and r["condition"] == lv and r["n_failed"] for r in scores["rows"])
    for r in scores["rows"]:
        # a metric undefined in every scenario (IAS when no message touched private information)
        # keeps a row with n = 0 and no value; a headline leak rate always has data or failures
        assert r["n"] >= 1 or r["mean"] is None
        assert r["metric"] not in HEADLINE.values() or r["n"] + r["n_failed"] >= 1


def _template_lines() -> list[str]:
    """Literal sentences of every agent-side prompt template (privacy ladder, system prompts)."""
    root = Path(__file__).resolve().parent.parent / "localbench" / "benchmarks" / "asb" / "prompts"
    out = []
    for f in root.glob("*.j2"):
        for line in f.read_text().splitlines():
            line = line.strip(" -#*")
            if len(line) >= 30 and "{" not in line and "}" not in line:
                out.append(line)
    return out


async def test_judges_are_template_blind(tiny_run, tmp_path):
    """Inspect every judge request of a run: no privacy level, no agent prompt text, no ladder heading."""
    from localbench.benchmarks.asb.ladder import LEVELS, MARKERS
    from localbench.pipeline import judge_transcripts, scenarios_for, spec_of
    from localbench.runlog import Judgment, RecordStore
    from localbench.runlog import RunDir
    from localbench.serving.client import StructuredClient
    from localbench.serving.engines import open_backend

    spec = spec_of(tiny_run)
    backend = open_backend("tiny-random", "hf")
    seen = []
    real = backend.complete

    async def recording(req):
        seen.append(req)
        return await real(req)

    backend.complete = recording
    client = StructuredClient(backend)
    transcripts = list(RunDir(tiny_run).transcripts().read())
    await judge_transcripts(spec, transcripts, scenarios_for(spec), client, RecordStore(tmp_path / "j.jsonl", Judgment))
    await client.aclose()
    assert len(seen) > 20
    # mode names that are not plain English words ("explicit" is, and rubrics may use it)
    forbidden = list(MARKERS.values()) + ["full_defense", "unconstrained", "zdd"] + _template_lines()
    labels = [lv.label for lv in LEVELS.values()]
    for req in seen:
        text = "\n".join(m["content"] for m in req.messages)
        for f in forbidden:
            assert f not in text, f"judge request {req.tag} contains {f!r}"
        for lab in labels:
            assert f" {lab} " not in text and f"level {lab}" not in text


def test_resume_makes_no_new_calls(tiny_run):
    before = _jsonl(tiny_run / "judgments.jsonl")
    r = _run_cli("run", "--agent", "tiny-random", "--engine", "hf", "--categories", CATS, "--conditions", "L0,L1,L2",
                 "--limit", "1", "--max-rounds", "2", "--max-tokens", "200", "--out", str(tiny_run.parent), "--run-id", "tiny")
    assert r.returncode == 0, r.stderr[-2000:]
    after = _jsonl(tiny_run / "judgments.jsonl")
    assert len(after) == len(before)
    assert len(_jsonl(tiny_run / "transcripts.jsonl")) == 21


def test_an_interrupted_judge_stage_is_reported_not_scored_as_no_leak(tiny_run, tmp_path):
    """Judgments missing for part of a simulation (a killed judge stage) fail its metrics and say
    so in the scores' notes; judging again completes it."""
    import shutil

    run = tmp_path / "tiny"
    shutil.copytree(tiny_run, run)
    judgments = _jsonl(run / "judgments.jsonl")
    assert all(j.get("sim_targets") for j in judgments), "every judgment records its simulation's planned calls"
    gc_sim = next(j["sim_key"] for j in judgments if j["category"] == "GC")
    cut = [j for j in judgments if not (j["sim_key"] == gc_sim and j["judge"] == "privacy_pairs")]
    assert len(cut) < len(judgments)
    (run / "judgments.jsonl").write_text("".join(json.dumps(j) + "\n" for j in cut))
    r = _run_cli("score", str(run))
    assert r.returncode == 0, r.stderr[-2000:]
    rows = {x["key"]: x for x in _jsonl(run / "scenario_scores.jsonl")}
    assert rows[gc_sim]["unscored"] == "judging incomplete" and "MPLR" in rows[gc_sim]["failed"]
    assert rows[gc_sim]["metrics"]["MPLR"] is None
    notes = json.loads((run / "scores.json").read_text())["notes"]
    assert any("judging incomplete" in n and "localbench judge" in n for n in notes), notes
    r = _run_cli("judge", str(run))
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(_jsonl(run / "judgments.jsonl")) == len(judgments)
    r = _run_cli("score", str(run))
    rows = {x["key"]: x for x in _jsonl(run / "scenario_scores.jsonl")}
    assert rows[gc_sim]["unscored"] is None


def test_a_run_keeps_to_one_judge_model(tiny_run, tmp_path):
    """Judging a judged run with another model is refused (labels would mix under one name); a
    judge chosen for the judge stage is recorded in spec.yaml; bad flags and paths are one line."""
    import shutil

    import yaml

    run = tmp_path / "tiny"
    shutil.copytree(tiny_run, run)
    r = _run_cli("judge", str(run), "--judge", "smollm2-135m")
    assert r.returncode != 0 and "already judged by tiny-random, not smollm2-135m" in r.stderr, r.stderr[-2000:]
    assert "judges rejudge" in r.stderr and "Traceback" not in r.stderr
    r = _run_cli("judge", str(run), "--engine", "foo")
    assert r.returncode != 0 and "serving.engine" in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    r = _run_cli("score", str(tmp_path / "no-such-run"))
    assert r.returncode != 0 and "no such run directory" in r.stderr and not (tmp_path / "no-such-run").exists()
    from localbench.serving.presets import presets_dir

    by_path = str(presets_dir() / "tiny-random.yaml")  # the same model, named by its file: nothing to redo
    r = _run_cli("judge", str(run), "--judge", by_path)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = yaml.safe_load((run / "spec.yaml").read_text())
    assert doc["judge"]["model"] == by_path and doc["spec"]["models"]["judge"] is None  # the run's spec is kept
    r = _run_cli("simulate", "--agent", "tiny-random", "--engine", "hf", "--categories", CATS, "--conditions",
                 "L0,L1,L2", "--limit", "1", "--max-rounds", "2", "--out", str(tmp_path), "--run-id", "tiny")
    assert r.returncode == 0 and "21 already done" in r.stdout, r.stderr[-2000:]  # still resumes
    doc["judge"]["rubrics"]["asb/task.j2"] = "an-older-rubric"  # as if the rubric had been edited since
    (run / "spec.yaml").write_text(yaml.safe_dump(doc))
    r = _run_cli("judge", str(run))
    assert r.returncode != 0 and "judged with other rubrics than these (asb/task.j2 changed)" in r.stderr, r.stderr


def test_a_judge_chosen_for_the_judge_stage_labels_and_resumes_the_run(tiny_dir, tmp_path):
    """`judge RUN --judge B` on an unjudged run: scores and `judges report --run` name B, and a plain
    `judge RUN` or `run` afterwards goes on with B instead of refusing the run. (One simulation: the
    rule is per run, not per scenario.)"""
    from localbench.rejudge import LoadedRun, run_judgments
    from localbench.serving.presets import presets_dir

    flags = ["--agent", "tiny-random", "--engine", "hf", "--categories", "MC", "--conditions", "L0", "--limit", "1",
             "--max-rounds", "2", "--max-tokens", "200", "--out", str(tmp_path), "--run-id", "tiny"]
    r = _run_cli("simulate", *flags)  # `run` alone would take the embedded default's 160-token turns
    assert r.returncode == 0, r.stderr[-2000:]
    run = tmp_path / "tiny"
    assert not (run / "judgments.jsonl").exists()
    other = tmp_path / "tiny-b.yaml"  # the same weights under another preset name: another judge to localbench
    other.write_text((presets_dir() / "tiny-random.yaml").read_text())  # a preset file is named by its stem
    r = _run_cli("judge", str(run), "--judge", str(other))
    assert r.returncode == 0, r.stderr[-2000:]
    assert {j["judge_model"] for j in _jsonl(run / "judgments.jsonl")} - {"rule"} == {"tiny-b"}
    for args in (["judge", str(run)], ["run", *flags]):
        r = _run_cli(*args)
        assert r.returncode == 0 and "0 calls made" in r.stderr, r.stderr[-2000:]
    assert {x["judge"] for x in _jsonl(run / "scenario_scores.jsonl")} == {str(other)}
    own = [j for j in run_judgments(LoadedRun.read(run)) if j.own]
    assert [j.judge for j in own] == [str(other)]


def test_run_stops_after_simulate_when_the_engine_is_dead(tmp_path):
    """A dead server: `run` exits non-zero naming the endpoint, and never judges or scores a partial set."""
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    r = _run_cli("run", "--agent", "tiny-random", "--engine", "openai", "--base-url", url, "--categories", "CD",
                 "--conditions", "L0", "--limit", "1", "--out", str(tmp_path), "--run-id", "dead", timeout=300)
    assert r.returncode != 0
    # the preflight meets the dead server before the first simulation, and names it
    assert "preflight: preset 'tiny-random' (agent, engine openai)" in r.stderr and url in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "dead" / "transcripts.jsonl").exists()  # nothing written as a failed simulation
    assert not (tmp_path / "dead" / "judgments.jsonl").exists() and not (tmp_path / "dead" / "scores.json").exists()
    # without the preflight (serving.preflight: false), the simulations meet it and the run stops there
    spec = tmp_path / "no-preflight.yaml"
    spec.write_text(json.dumps({"benchmark": "asb", "models": {"agent": "tiny-random"}, "categories": ["CD"],
                                "conditions": ["L0"], "limit": 1, "out": str(tmp_path), "run_id": "dead2",
                                "serving": {"engine": "openai", "base_url": url, "preflight": False}}))
    r = _run_cli("run", "--spec", str(spec), timeout=300)
    assert r.returncode != 0 and "stopped by engine errors" in r.stderr and url in r.stderr, r.stderr[-2000:]
    assert not (tmp_path / "dead2" / "judgments.jsonl").exists() and not (tmp_path / "dead2" / "scores.json").exists()


@pytest.mark.slow
def test_run_end_to_end_with_smollm2(tmp_path, smollm2_dir):
    """The real packaged model through every stage: schema-valid or recorded-failed, report written."""
    r = _run_cli("run", "--agent", "smollm2-135m", "--engine", "hf", "--categories", "CD", "--conditions", "L0",
                 "--limit", "1", "--max-rounds", "2", "--out", str(tmp_path), "--run-id", "smol")
    assert r.returncode == 0, r.stderr[-3000:]
    run = tmp_path / "smol"
    transcripts = _jsonl(run / "transcripts.jsonl")
    assert len(transcripts) == 1 and not any(t.get("error") for t in transcripts)
    judgments = _jsonl(run / "judgments.jsonl")
    assert judgments and all((j["label"] is None) == (j["failure"] is not None) for j in judgments)
    scores = json.loads((run / "scores.json").read_text())
    assert {r["metric"] for r in scores["rows"]} >= {"CDLR", "TCQ"}
    assert "smollm2-135m" in (run / "report.html").read_text()
