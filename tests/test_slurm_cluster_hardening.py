"""Issue 18's Slurm items on the real single-node cluster (scripts/slurm-up.sh starts it).

- a task that requeues itself at the time-limit warning requeues exactly itself, never its
  siblings of the same array;
- a warning as early as the time limit is refused at submit, and self-requeues are capped
  (slurm.max_requeues), after which the task fails with a status line that says why;
- a failed or cancelled merge job whose shards are all complete is resubmitted alone, and status
  says so; the merge job keeps a state file, so status knows how it ended once the scheduler forgot;
- the merge job's own resources: options unset with null, extra_sbatch included;
- cancel on finished jobs does not claim to have cancelled them.

CPU only, the tiny random model, as tests/test_slurm_cluster.py (whose helpers these use).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_slurm_cluster import (  # noqa: F401  (cluster, model_ready, _cancel_leftovers are fixtures)
    _cancel_leftovers, cluster, diagnostics, expected_keys, finished, lb, model_ready, no_duplicates, records,
    spec_dict, status, submit, wait_for, write_spec,
)

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(900)]


def _log(run: Path, name: str) -> str:
    p = run / "slurm" / "logs" / name
    return p.read_text(errors="replace") if p.exists() else ""


def _scontrol(job: str) -> str:
    return subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True, text=True).stdout


def _warn(job: str) -> None:
    """What Slurm does at the --signal time: the warning signal to the task's batch shell."""
    r = subprocess.run(["scancel", "--signal=USR1", "--batch", job], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _running_with_records(run: Path, shard: int) -> bool:
    st = status(run)["shards"][shard]
    if st["state"] in ("FAILED", "CANCELLED", "COMPLETED"):
        pytest.fail(f"shard {shard} ended before the test could signal it\n{diagnostics(run)}")
    return st["state"] == "RUNNING" and len(records(run / "shards" / str(shard) / "transcripts.jsonl")) >= 1


def test_self_requeue_requeues_its_own_task_and_leaves_the_sibling_alone(cluster, model_ready, tmp_path):
    d = spec_dict(run_id="sibling", num_shards=2, limit=1, seeds=2, serving={"max_concurrency": 1},
                  slurm={"signal": "USR1@30", "time": "00:30:00"})
    run, rec = submit(write_spec(tmp_path / "spec.yaml", d), tmp_path)
    array = rec["submissions"][0]["array_job"]
    # both tasks running, each with work done: the old `scontrol requeue $SLURM_JOB_ID` of task 1
    # (whose job id is the array's) would requeue task 0 as well
    wait_for(lambda: _running_with_records(run, 0) and _running_with_records(run, 1), 240, "both shards running", run,
             every=0.2)
    _warn(f"{array}_1")
    st = wait_for(lambda: finished(run), 400, "the array and the merge", run)
    assert [s["state"] for s in st["shards"]] == ["COMPLETED"] * 2 and st["merge"]["state"] == "COMPLETED", \
        diagnostics(run)
    log0, log1 = _log(run, f"lb-sibling-{array}_0.out"), _log(run, f"lb-sibling-{array}_1.out")
    assert "restart 1" not in log0 and "DUE TO JOB REQUEUE" not in log0 and "received SIG" not in log0, log0[-3000:]
    runs0 = [json.loads(x) for x in (run / "slurm" / "state" / "shard-0.runs.jsonl").read_text().splitlines()]
    assert [r["restart"] for r in runs0] == [0]  # the sibling ran once, start to end
    assert f"requeueing job {array}_1 (self-requeue 1 of at most 3)" in log1 and "restart 1" in log1, log1[-3000:]
    assert json.loads((run / "slurm" / "state" / "shard-1.exit").read_text())["restarts"] == 1
    assert set(no_duplicates(run / "transcripts.jsonl")) == expected_keys(d)


def test_a_warning_as_early_as_the_time_limit_is_refused_at_submit(cluster, tmp_path):
    d = spec_dict(run_id="loop", num_shards=1, slurm={"signal": "USR1@120", "merge_job": {"time": "1"}})
    r = lb("slurm", "submit", str(write_spec(tmp_path / "spec.yaml", d)), cwd=tmp_path, check=False)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "field 'slurm.signal'" in r.stderr and "slurm.merge_job.time '1' is 60 s" in r.stderr, r.stderr
    assert not (tmp_path / "runs" / "loop" / "slurm" / "submission.json").exists()  # nothing submitted


def test_self_requeues_are_capped_and_the_task_then_fails_saying_why(cluster, model_ready, tmp_path):
    d = spec_dict(run_id="capped", num_shards=1, limit=1, seeds=3, serving={"max_concurrency": 1},
                  slurm={"signal": "USR1@30", "time": "00:30:00", "max_requeues": 1})
    run, rec = submit(write_spec(tmp_path / "spec.yaml", d), tmp_path)
    job = f"{rec['submissions'][0]['array_job']}_0"
    wait_for(lambda: _running_with_records(run, 0), 240, "the shard running", run, every=0.2)
    _warn(job)  # first warning: requeues itself (1 of at most 1)
    log_name = f"lb-capped-{job}.out"

    def running_again() -> bool:
        st = status(run)["shards"][0]
        return st["state"] == "RUNNING" and "step simulate:" in _log(run, log_name).split("restart 1")[-1]

    wait_for(running_again, 240, "the requeued shard running again", run, every=0.5)
    _warn(job)  # second warning: the cap is reached, the task fails instead of looping
    st = wait_for(lambda: finished(run), 240, "the capped shard to end", run)
    shard = st["shards"][0]
    assert shard["state"] == "FAILED" and shard["exit_code"].startswith("143"), diagnostics(run)
    assert "stopped at the time limit after 1 self-requeue(s)" in shard["why"], shard
    assert "not requeueing" in _log(run, log_name) and _log(run, log_name).count("restart 2") == 0
    state = json.loads((run / "slurm" / "state" / "shard-0.exit").read_text())
    assert state["gave_up"] == "max_requeues" and state["requeues"] == 1
    text = lb("slurm", "status", str(run), cwd=tmp_path).stdout
    assert "why: stopped at the time limit after 1 self-requeue(s)" in text, text
    # the work done before the cap is kept
    assert len(no_duplicates(run / "shards" / "0" / "transcripts.jsonl")) >= 1


def test_a_cancelled_then_failed_merge_job_is_resubmitted_alone(cluster, model_ready, tmp_path):
    # the post-merge command fails on its first run only (it leaves a mark), as a transient fault would
    d = spec_dict(run_id="merge-alone", num_shards=2, limit=1, categories=["CD", "MC"],
                  slurm={"after_merge": ["test -e {run}/tried || { touch {run}/tried; exit 3; }"]})
    run, rec = submit(write_spec(tmp_path / "spec.yaml", d), tmp_path)
    first_merge = rec["submissions"][0]["merge_job"]
    subprocess.run(["scancel", first_merge], check=True)  # cancelled while the shards run
    st = wait_for(lambda: finished(run), 300, "the shards to complete", run)
    assert [s["state"] for s in st["shards"]] == ["COMPLETED"] * 2 and st["merge"]["state"] == "CANCELLED"
    assert st["merge_needed"] and "submits the merge job alone" in st["merge_why"], st

    out = lb("slurm", "resubmit", str(run), "--failed", cwd=tmp_path).stdout
    assert out.startswith("resubmitted the merge job alone"), out
    sub = json.loads((run / "slurm" / "submission.json").read_text())["submissions"][-1]
    assert sub["array_job"] is None and sub["shards"] == [] and sub["merge_job"]
    st = wait_for(lambda: finished(run), 300, "the merge job resubmitted alone", run)
    assert st["merge"]["state"] == "FAILED" and st["merge_job"] == sub["merge_job"], diagnostics(run)
    assert st["merge_needed"] and "submits the merge job alone" in st["merge_why"]
    text = lb("slurm", "status", str(run), cwd=tmp_path).stdout
    assert "merge | job" in text and "FAILED" in text and "submits the merge job alone" in text, text

    lb("slurm", "resubmit", str(run), "--failed", cwd=tmp_path)
    st = wait_for(lambda: finished(run), 300, "the second merge resubmission", run)
    assert st["merge"]["state"] == "COMPLETED" and not st["merge_needed"], diagnostics(run)
    assert {r["key"] for r in records(run / "transcripts.jsonl")} == expected_keys(d)
    assert lb("slurm", "resubmit", str(run), cwd=tmp_path).stdout.startswith("nothing to resubmit")

    # once the scheduler has forgotten the jobs (MinJobAge; here an scontrol that knows none),
    # status still knows how each ended: from the state files the shards and the merge job wrote
    fake = tmp_path / "forgetful"
    fake.mkdir()
    (fake / "scontrol").write_text("#!/bin/sh\necho 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n")
    (fake / "scontrol").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    r = subprocess.run([str(Path(sys.prefix) / "bin" / "localbench"), "slurm", "status", str(run), "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    forgot = json.loads(r.stdout)
    assert forgot["merge"]["state"] == "COMPLETED" and forgot["merge"]["source"] == "state-file", forgot["merge"]
    assert [s["state"] for s in forgot["shards"]] == ["COMPLETED"] * 2

    # cancel on jobs that ended long ago says so instead of claiming to cancel them
    out = lb("slurm", "cancel", str(run), cwd=tmp_path).stdout
    assert out.startswith("nothing to cancel:") and "cancelled jobs" not in out, out
    # and the GPU-hours summary (CPU here: 0 GPU-hours) counts every run of every task
    usage = json.loads(lb("slurm", "usage", str(run), "--json", cwd=tmp_path).stdout)
    assert usage["task_runs"] == 2 + 2 and usage["gpu_hours"] == 0.0  # 2 shards + 2 merge runs (1 was cancelled pending)


def test_the_merge_job_has_its_own_resources_and_null_unsets_them(cluster, model_ready, tmp_path):
    d = spec_dict(run_id="own-res", num_shards=1, limit=1, categories=["CD"],
                  slurm={"mem": "3G", "extra_sbatch": ["--exclusive", "--comment=shards"],
                         "merge_job": {"mem": None, "cpus_per_task": None, "extra_sbatch": None}})
    run, rec = submit(write_spec(tmp_path / "spec.yaml", d), tmp_path)
    script = (run / "slurm" / "merge.sbatch").read_text()
    assert "--exclusive" not in script and "--comment" not in script and "--mem" not in script
    merge = _scontrol(rec["submissions"][0]["merge_job"])
    array = _scontrol(rec["submissions"][0]["array_job"])
    assert "OverSubscribe=NO" in array and "Comment=shards" in array  # the array's own options
    assert "OverSubscribe=NO" not in merge and "Comment=shards" not in merge
    assert "MinMemoryNode=3G" in array and "MinMemoryCPU=1000M" in merge  # cluster default: DefMemPerCPU
    st = wait_for(lambda: finished(run), 300, "the run", run)
    assert st["merge"]["state"] == "COMPLETED", diagnostics(run)
