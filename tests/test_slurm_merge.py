"""Merging shard run directories, and reading job states (no cluster needed: real files, real
scheduler output captured from the Slurm 22.05 test cluster)."""

from __future__ import annotations

import json
import sqlite3

import pytest
import yaml

from localbench.errors import UserError
from localbench.runlog import JsonlStore
from localbench.serving.cache import ResponseCache
from localbench.serving.types import RawCompletion
from localbench.slurm.layout import JobSubmission, RunLayout, SubmissionRecord
from localbench.slurm.merge import merge_run
from localbench.slurm.status import (expand_indices, last_error_line, parse_sacct, parse_scontrol,
                                     run_status)
from localbench.spec import RunSpec


def make_run(tmp_path, n: int = 3) -> RunLayout:
    """A submitted run with n shards whose directories hold records, provenance and a cache."""
    lay = RunLayout(tmp_path / "runs" / "r1")
    spec = RunSpec.model_validate({"run_id": "r1", "out": str(tmp_path / "runs"), "num_shards": n})
    lay.slurm.mkdir(parents=True)
    lay.spec_file.write_text(yaml.safe_dump(spec.model_copy(update={"num_shards": None}).model_dump(mode="json")))
    lay.write_record(SubmissionRecord(run_dir=str(lay.run), num_shards=n, job_name="lb-r1",
                                      log_dir=str(lay.default_log_dir), workdir=str(tmp_path),
                                      submissions=[JobSubmission(array_job="10", merge_job="11",
                                                                 shards=list(range(n)), array_script="a")]))
    keys = sorted(f"sc{k}|L0|0" for k in range(7))
    for i in range(n):
        d = lay.shard_dir(i)
        d.mkdir(parents=True)
        (d / "spec.yaml").write_text(yaml.safe_dump({"spec": {"shard": i}, "created": f"t{i}", "resumed": [],
                                                     "versions": {"localbench": "0.1.0"},
                                                     "simulation": {"prompts": {"a": "h1"}}}))
        store = JsonlStore(d / "transcripts.jsonl")
        for k in spec.model_copy(update={"shard": i}).select_shard(keys):
            store.append({"key": k, "shard_of_origin": i, "text": f"sim {k}"})
        c = ResponseCache(d / "cache.sqlite")
        c.put(f"key-{i}", "m", RawCompletion(text=f"t{i}", finish_reason="stop", tokens_in=1, tokens_out=1))
        c.put("shared-key", "m", RawCompletion(text="same", finish_reason="stop", tokens_in=1, tokens_out=1))
        c.close()
    return lay


def keys_of(path) -> list[str]:
    return [json.loads(x)["key"] for x in path.read_text().splitlines()]


def test_merge_is_the_union_by_key_and_is_idempotent(tmp_path):
    lay = make_run(tmp_path)
    rep = merge_run(lay.run)
    keys = keys_of(lay.run / "transcripts.jsonl")
    assert keys == sorted(f"sc{k}|L0|0" for k in range(7))  # every key once, in key order
    assert rep.added["transcripts.jsonl"] == 7 and rep.total["transcripts.jsonl"] == 7
    doc = yaml.safe_load((lay.run / "spec.yaml").read_text())
    assert doc["spec"]["run_id"] == "r1" and doc["spec"]["num_shards"] is None  # the unsharded spec
    assert doc["simulation"] == {"prompts": {"a": "h1"}} and doc["slurm"]["merged_shards"] == [0, 1, 2]
    with sqlite3.connect(lay.run / "cache.sqlite") as c:
        assert {r[0] for r in c.execute("SELECT key FROM completions")} == {"key-0", "key-1", "key-2", "shared-key"}
    rep2 = merge_run(lay.run)  # again: nothing new, nothing doubled
    assert rep2.added["transcripts.jsonl"] == 0
    assert keys_of(lay.run / "transcripts.jsonl") == keys


def test_a_key_in_two_shards_is_written_once(tmp_path):
    lay = make_run(tmp_path)
    dup = next(JsonlStore(lay.shard_dir(0) / "transcripts.jsonl").read())
    JsonlStore(lay.shard_dir(1) / "transcripts.jsonl").append(dup)  # identical copy
    other = dict(next(JsonlStore(lay.shard_dir(2) / "transcripts.jsonl").read()), text="different")
    JsonlStore(lay.shard_dir(0) / "transcripts.jsonl").append(other)  # conflicting copy
    rep = merge_run(lay.run)
    keys = keys_of(lay.run / "transcripts.jsonl")
    assert len(keys) == len(set(keys)) == 7
    assert rep.duplicates["transcripts.jsonl"] == 1
    assert rep.conflicts["transcripts.jsonl"] == [other["key"]]


def test_merge_waits_for_no_one_holding_the_run(tmp_path):
    """The merge writes into the run directory: a command holding it (a judge stage, say) refuses it."""
    from test_run_lock import _hold

    from localbench.runlog import RunLocked

    lay = make_run(tmp_path)
    holder = _hold(lay.run, tmp_path / "ready")
    try:
        with pytest.raises(RunLocked, match="holder-under-test"):
            merge_run(lay.run)
        assert not (lay.run / "transcripts.jsonl").exists()  # nothing written under someone else's hold
    finally:
        holder.kill()
        holder.wait()
    assert merge_run(lay.run).total["transcripts.jsonl"] == 7


def test_missing_shard_is_an_error_unless_partial(tmp_path):
    lay = make_run(tmp_path)
    (lay.shard_dir(1) / "spec.yaml").unlink()
    with pytest.raises(UserError, match=r"shard\(s\) \[1\]"):
        merge_run(lay.run)
    rep = merge_run(lay.run, allow_partial=True)
    assert rep.missing == [1] and rep.total["transcripts.jsonl"] < 7


def test_provenance_differences_are_recorded(tmp_path):
    lay = make_run(tmp_path)
    doc = yaml.safe_load((lay.shard_dir(2) / "spec.yaml").read_text())
    doc["simulation"]["prompts"]["a"] = "h2"
    (lay.shard_dir(2) / "spec.yaml").write_text(yaml.safe_dump(doc))
    rep = merge_run(lay.run)
    assert rep.provenance_differs == ["simulation"]


def test_merge_without_a_submission_says_so(tmp_path):
    with pytest.raises(UserError, match="no Slurm submission"):
        merge_run(tmp_path)


# ---- scheduler output (captured from the real cluster) --------------------------------------

SCONTROL = """\
JobId=1 ArrayJobId=1 ArrayTaskId=1-3%1 ArrayTaskThrottle=1 JobName=wrap JobState=PENDING Reason=JobArrayTaskLimit Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 StdOut=/dev/null
JobId=2 ArrayJobId=1 ArrayTaskId=0 ArrayTaskThrottle=1 JobName=wrap JobState=RUNNING Reason=None Dependency=(null) Requeue=1 Restarts=2 BatchFlag=1 Reboot=0 ExitCode=0:0 StdOut=/dev/null
"""
SCONTROL_DONE = """\
JobId=3 ArrayJobId=1 ArrayTaskId=1 JobName=wrap JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 ExitCode=3:0
JobId=6 JobName=wrap JobState=CANCELLED Reason=DependencyNeverSatisfied Dependency=afterok:5_*(failed) Restarts=0 ExitCode=0:0
"""
SACCT = """\
6|CANCELLED|0:0|Dependency
5_0|COMPLETED|0:0|None
5_1|FAILED|3:0|JobArrayTaskLimit
5_[2-3]|PENDING|0:0|JobArrayTaskLimit
10|CANCELLED by 0|0:0|None
"""


def test_expand_indices():
    assert expand_indices("0-3") == [0, 1, 2, 3]
    assert expand_indices("1,3-4%2") == [1, 3, 4]
    assert expand_indices("[5]") == [5]


def test_parse_scontrol_expands_pending_tasks():
    jobs = parse_scontrol(SCONTROL + SCONTROL_DONE)
    assert {j: (i.state, i.reason) for j, i in jobs.items() if j.startswith("1_")} == {
        "1_0": ("RUNNING", "None"), "1_1": ("FAILED", "NonZeroExitCode"),
        "1_2": ("PENDING", "JobArrayTaskLimit"), "1_3": ("PENDING", "JobArrayTaskLimit")}
    assert jobs["1_0"].restarts == 2 and jobs["1_1"].exit_code == "3:0"
    assert jobs["6"].state == "CANCELLED" and jobs["6"].reason == "DependencyNeverSatisfied"


def test_parse_sacct():
    jobs = parse_sacct(SACCT)
    assert jobs["5_1"].state == "FAILED" and jobs["5_1"].exit_code == "3:0"
    assert jobs["5_2"].state == jobs["5_3"].state == "PENDING"
    assert jobs["10"].state == "CANCELLED"  # "CANCELLED by 0"


def test_last_error_line_prefers_the_error(tmp_path):
    log = tmp_path / "x.out"
    log.write_text("[localbench 10:00:00] step simulate: localbench simulate --spec s\n"
                   "error: unknown model preset 'nope': no serving/nope.yaml\n"
                   "[localbench 10:00:02] step simulate failed with exit status 2\n")
    assert last_error_line(log).startswith("error: unknown model preset 'nope'")
    assert last_error_line(tmp_path / "absent.out") is None


def test_status_from_state_files_when_the_scheduler_has_forgotten(tmp_path, monkeypatch):
    """Without sacct and after MinJobAge, the task's own state file still tells how it ended."""
    import localbench.slurm.status as st

    monkeypatch.setattr(st, "query_sacct", lambda ids: None)
    monkeypatch.setattr(st, "query_scontrol", lambda ids: {})
    lay = make_run(tmp_path)
    lay.state.mkdir()
    lay.state_file(0).write_text(json.dumps({"shard": 0, "job_id": "12", "array_job_id": "10", "exit_code": 0,
                                             "signal": "", "restarts": 0}))
    lay.state_file(1).write_text(json.dumps({"shard": 1, "job_id": "13", "array_job_id": "10", "exit_code": 2,
                                             "signal": "", "restarts": 1}))
    lay.default_log_dir.mkdir()
    (lay.default_log_dir / "lb-r1-10_1.out").write_text("error: something specific broke\n")
    status = run_status(lay.run)
    assert [s.state for s in status.shards] == ["COMPLETED", "FAILED", "UNKNOWN"]
    assert status.shards[1].why.endswith("log: error: something specific broke")
    assert status.shards[0].transcripts == 3 and not status.accounting
    assert "shard 1 | job 10_1 | FAILED | exit 2:0" in status.text()


def test_status_reads_a_relative_log_dir_from_the_workdir(tmp_path, monkeypatch):
    """A record whose log_dir is relative (written before submit stored it absolute) names a directory
    in the workdir, where the jobs ran, not in the directory status is run from."""
    import localbench.slurm.status as st

    monkeypatch.setattr(st, "query_sacct", lambda ids: None)
    monkeypatch.setattr(st, "query_scontrol", lambda ids: {})
    lay = make_run(tmp_path)
    rec = lay.read_record()
    lay.write_record(rec.model_copy(update={"log_dir": "logs"}))
    lay.state.mkdir()
    lay.state_file(1).write_text(json.dumps({"shard": 1, "job_id": "13", "array_job_id": "10", "exit_code": 2,
                                             "signal": "", "restarts": 0}))
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "lb-r1-10_1.out").write_text("error: found in the workdir\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    status = run_status(lay.run)
    assert status.shards[1].log == str(tmp_path / "logs" / "lb-r1-10_1.out")
    assert status.shards[1].why.endswith("log: error: found in the workdir")
