"""The typed, versioned run records, and a run recorded by the code before them.

tests/golden/asb-v1-run/ is the embedded default run (SmolLM2-135M, asb-mini at L0 and L2) exactly
as commit 1d5bd6c wrote it: untyped records with no version. It must still score to the same
numbers (every row and comparison as recorded; scores.json now also carries the warnings its
degenerate judge earns), render, and resume.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from localbench.errors import UserError
from localbench.scores import SCORES_VERSION
from localbench.runlog import (RECORD_VERSION, Judgment, RecordStore, RecordVersionError, ScenarioScore,
                                Transcript, read_records)

RECORDED = Path(__file__).resolve().parent / "golden" / "asb-v1-run"
RUN_ID = "asb-d9c285b0e4"


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_version_1_records_read_with_their_own_fields_in_the_payload():
    [t, *_] = read_records(RECORDED / "transcripts.jsonl", Transcript)
    assert t.version == 1 and t.category == "CD" and t.condition == "L0" and t.entries[0].kind
    assert t.payload == {"subtype": "health_finance", "mode": "unconstrained", "engine": "dyadic"}
    judgments = read_records(RECORDED / "judgments.jsonl", Judgment)
    assert {j.judge for j in judgments} == {"privacy", "privacy_pairs", "abstraction", "task", "behaviour"}
    scores = read_records(RECORDED / "scenario_scores.jsonl", ScenarioScore)
    assert {s.group for s in scores if s.category == "CD"} == {"health→finance"}  # v1's domain_pair
    assert t.line()["version"] == RECORD_VERSION  # what is written is always the current version


def test_a_newer_or_broken_record_is_one_line_naming_file_line_and_version(tmp_path):
    f = tmp_path / "transcripts.jsonl"
    good = _lines(RECORDED / "transcripts.jsonl")[0]
    f.write_text(json.dumps(good) + "\n" + json.dumps({**good, "key": "x", "version": RECORD_VERSION + 1}) + "\n")
    with pytest.raises(RecordVersionError, match=f"transcripts.jsonl:2: transcript record format version "
                                                 f"{RECORD_VERSION + 1} is newer than this localbench reads"):
        list(RecordStore(f, Transcript).read())
    f.write_text(json.dumps({"key": "k", "scenario": "s"}) + "\n")
    with pytest.raises(UserError, match=r"transcripts.jsonl:1: not a transcript record: field '\w+': Field required"):
        list(RecordStore(f, Transcript).read())


def _copy_run(tmp_path: Path) -> Path:
    run = tmp_path / RUN_ID
    shutil.copytree(RECORDED, run)
    return run


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _same_scores(path: Path) -> None:
    """The recorded scores.json's rows and comparisons, exactly (every number as recorded; version 1's
    ``level`` now ``condition``), plus the judge warnings this recorded judge earns; nothing else may differ."""
    new, old = json.loads(path.read_text()), json.loads((RECORDED / "scores.json").read_text())
    assert (old["version"], new["version"]) == (1, SCORES_VERSION) and all("level" in r for r in old["rows"])
    old["version"] = SCORES_VERSION
    old["rows"] = [{("condition" if k == "level" else k): v for k, v in r.items()} for r in old["rows"]]
    warnings = new.pop("judge_warnings")
    trust = new.pop("trust")  # a section added since (issue 45 item 3)
    assert {c.pop("test") for c in new["comparisons"]} == {"sign-flip"}  # a field added since: the same test
    assert new == old
    # the 135M judge is degenerate; its warnings are computed, not its numbers dropped; and it is the
    # agent's own model, so the run is self-judged (issue 45); no judge eval measured any of its judges
    judges = {"privacy", "privacy_pairs", "abstraction", "task", "behaviour"}
    assert {(w["judge"], w["pattern"]) for w in warnings} == {
        ("behaviour", "constant"), ("behaviour", "contradiction"), ("task", "contradiction"), ("abstraction", "undefined"),
        ("judge", "self_judging")} | {(j, "unmeasured") for j in judges}
    assert {(j["judge"], j["measured"]) for j in trust["judges"]} == {(j, False) for j in judges}
    assert {m["status"] for m in trust["metrics"]} == {"unmeasured"} and len(trust["metrics"]) == 14  # 7 categories × 2


def test_a_recorded_run_scores_to_the_same_numbers_and_renders(tmp_path):
    run = _copy_run(tmp_path)
    for cmd in ("score", "report"):
        r = _cli(cmd, str(run))
        assert r.returncode == 0, r.stderr[-2000:]
    _same_scores(run / "scores.json")
    old = {x["key"]: x for x in _lines(RECORDED / "scenario_scores.jsonl")}
    for new in _lines(run / "scenario_scores.jsonl"):
        was = old[new["key"]]
        assert new["version"] == RECORD_VERSION
        assert (new["metrics"], new["failed"], new["unscored"], new["group"]) == (
            was["metrics"], was["failed"], was["unscored"], was["domain_pair"])
    html = (run / "report.html").read_text()
    assert "AgentSocialBench report" in html and "Headline metrics by model at privacy level L2" in html


def test_rerunning_the_embedded_default_resumes_a_recorded_run(tmp_path, smollm2_dir):
    """The same spec, the same run id (the spec's hash did not move), nothing simulated or judged again.
    The run was the embedded default when it was recorded (4 rounds for CD, MC, CU; 200-token turns):
    its own spec is given, as a later default differs."""
    run = _copy_run(tmp_path)
    before = (run / "transcripts.jsonl").read_text(), (run / "judgments.jsonl").read_text()
    spec = tmp_path / "recorded-spec.yaml"
    spec.write_text(yaml.safe_dump(yaml.safe_load((RECORDED / "spec.yaml").read_text())["spec"]))
    r = _cli("run", "--spec", str(spec), "--out", str(tmp_path), "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    assert f"run directory: {run}" in r.stdout
    assert "14 of 14 simulations already done" in r.stderr
    assert "judging done: 0 calls made, 80 already done, 0 failed" in r.stderr
    assert ((run / "transcripts.jsonl").read_text(), (run / "judgments.jsonl").read_text()) == before
    _same_scores(run / "scores.json")
