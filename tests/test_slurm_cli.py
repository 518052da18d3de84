"""`localbench slurm` commands that need no cluster: dry run, errors, prefetch, the task helpers."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from localbench.slurm.prefetch import HUB_PATTERNS, cache_env, prefetch, prefetch_scenarios
from localbench.spec import RunSpec

LOCALBENCH = str(Path(sys.prefix) / "bin" / "localbench")


def lb(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LOCALBENCH, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_dry_run_prints_both_scripts_and_writes_nothing(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"run_id": "dry", "num_shards": 3, "models": {"agent": "tiny-random"},
                                    "slurm": {"partition": "debug"}}))
    r = lb("slurm", "submit", str(spec), "--dry-run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "#SBATCH --array=0-2" in r.stdout and "#SBATCH --partition=debug" in r.stdout
    assert "lb_step merge localbench slurm merge" in r.stdout
    assert f"--dependency=afterok:<array job id> {tmp_path}/runs/dry/slurm/merge.sbatch" in r.stdout
    assert not (tmp_path / "runs").exists()


def test_bad_option_is_one_line_naming_file_and_field(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text(yaml.safe_dump({"slurm": {"partition": "gpu; rm -rf ~"}}))
    r = lb("slurm", "submit", str(spec), "--dry-run", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [r.stderr.strip()]
    assert f"{spec}: field 'slurm.partition'" in r.stderr and "#SBATCH" in r.stderr


def test_status_of_a_directory_that_was_never_submitted(tmp_path):
    r = lb("slurm", "status", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 2 and "no Slurm submission here" in r.stderr


def test_cache_env_follows_scratch_and_expands_variables(monkeypatch):
    monkeypatch.setenv("SCRATCH", "/s")
    spec = RunSpec.model_validate({"slurm": {"scratch": "$SCRATCH/lb", "hf_home": "/models/hf"}})
    assert cache_env(spec) == {"HF_HOME": "/models/hf", "LOCALBENCH_CACHE": "/s/lb/localbench"}


def test_prefetch_builds_local_presets_into_the_tasks_cache(tiny_dir, monkeypatch):
    """The tiny model, already in the cache the tasks use, is found there (no rebuild)."""
    cache = tiny_dir.parent.parent  # <LOCALBENCH_CACHE>/models/<name>
    spec = RunSpec.model_validate({"models": {"agent": "tiny-random"}, "slurm": {"localbench_cache": str(cache)}})
    for var in ("HF_HOME", "LOCALBENCH_CACHE"):  # prefetch sets them; restore afterwards
        monkeypatch.setenv(var, "unused")
        monkeypatch.delenv(var)
    got = prefetch(spec)
    assert [(f.role, f.preset) for f in got] == [("agent", "tiny-random"), ("user_sim", "tiny-random"),
                                                  ("judge", "tiny-random")]
    assert {f.location for f in got} == {str(tiny_dir)}


def test_prefetch_downloads_hub_models_into_the_tasks_hf_home(monkeypatch, tmp_path):
    calls = []

    def fake_download(repo, revision, allow_patterns, cache_dir, ignore_patterns=None):
        assert "consolidated*" in ignore_patterns  # Mistral's second copy of its weights is not fetched
        calls.append((repo, revision, allow_patterns, cache_dir))
        return f"{cache_dir}/{repo}"

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    for var in ("HF_HOME", "LOCALBENCH_CACHE"):  # prefetch sets them; restore afterwards
        monkeypatch.delenv(var, raising=False)
    spec = RunSpec.model_validate({"models": {"agent": "qwen2.5-7b-instruct", "judge": "llama-3.1-8b-instruct"},
                                   "slurm": {"hf_home": str(tmp_path / "hf")}})
    got = prefetch(spec)
    assert [c[0] for c in calls] == ["Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"]
    assert all(c[3] == str(tmp_path / "hf" / "hub") and c[2] == HUB_PATTERNS for c in calls)
    assert got[2].location.endswith("Llama-3.1-8B-Instruct")


def test_prefetch_fetches_an_hf_scenario_source_into_the_tasks_caches(tiny_dir, monkeypatch, tmp_path):
    """Compute nodes run offline, and `slurm prefetch` fetched models only (issue 47, item 17): a spec
    whose scenarios are `hf:NAME` has its dataset downloaded by the benchmark's own loader, once, with
    the tasks' HF_HOME and LOCALBENCH_CACHE set, and the command says how many scenarios the run has.
    The download itself is a fake standing in for the Hub (no network here)."""
    from typer.testing import CliRunner

    from localbench.benchmarks.asb import hf_dataset
    from localbench.benchmarks.asb.loaders import BUILTIN_DIR
    from localbench.cli import app

    downloads = []

    def fake_hub_download(name):
        downloads.append((name, os.environ.get("HF_HOME"), os.environ.get("LOCALBENCH_CACHE")))
        return [], BUILTIN_DIR  # the raw files' folder, as the fallback download returns it

    monkeypatch.setattr(hf_dataset, "hf_records", fake_hub_download)
    for var in ("HF_HOME", "LOCALBENCH_CACHE"):  # prefetch sets them; restore afterwards
        monkeypatch.setenv(var, "unused")
    cache = tiny_dir.parent.parent  # <LOCALBENCH_CACHE>/models/<name>: the tiny model is already built there
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"benchmark": "asb", "scenarios": "hf:org/AgentSocialBench", "limit": 1,
                                    "models": {"agent": "tiny-random"},
                                    "slurm": {"hf_home": str(tmp_path / "hf"), "localbench_cache": str(cache)}}))
    res = CliRunner().invoke(app, ["slurm", "prefetch", str(spec)])
    assert res.exit_code == 0, res.output
    assert downloads == [("org/AgentSocialBench", str(tmp_path / "hf"), str(cache))]
    assert "scenarios: hf:org/AgentSocialBench -> 7 scenarios" in res.output  # one per category (limit 1)

    downloads.clear()  # a source on disk has nothing to fetch
    assert prefetch_scenarios(RunSpec.model_validate({"scenarios": "builtin"})) is None and downloads == []


def test_free_port_and_wait_url(tmp_path):
    port = int(lb("slurm", "free-port", cwd=tmp_path).stdout)
    assert 1024 < port < 65536
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        r = lb("slurm", "wait-url", f"http://127.0.0.1:{port}/", "--timeout", "20", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    finally:
        server.shutdown()
    dead = subprocess.Popen(["true"])
    dead.wait()
    t0 = time.monotonic()
    r = lb("slurm", "wait-url", f"http://127.0.0.1:{port}/", "--pid", str(dead.pid), "--timeout", "60", cwd=tmp_path)
    assert r.returncode == 1 and "exited" in r.stderr and time.monotonic() - t0 < 20
