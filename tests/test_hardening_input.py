"""Issue 18, bad input at the edges: sensitivity labels, filesystem errors (a file as --out, a
read-only directory, a full disk), ids that become paths, simulations missing from a run, exit
statuses, and the one-line summary each stage ends with."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from localbench.benchmarks.asb.issues import ScenarioError
from localbench.benchmarks.asb.loaders import load_scenarios
from localbench.errors import EXIT_BAD_INPUT, EXIT_CANNOT_WRITE, EXIT_INCOMPLETE, StorageError
from localbench.runlog import JsonlStore
from localbench.spec import RunSpec, SpecError, load_spec

REPO = Path(__file__).resolve().parent.parent
RECORDED = REPO / "tests" / "golden" / "asb-v1-run"
UPSTREAM_FILE = "mediated_comm/MC_pronoun_safe_intro_001.json"


def cli(*args: str, cwd: Path | None = None, pre: str = "", timeout: int = 600) -> subprocess.CompletedProcess:
    """`localbench ARGS` in a fresh interpreter; ``pre`` is Python run first (to inject a fault)."""
    code = f"import sys\n{pre}\nfrom localbench.cli import main\nsys.argv = ['localbench', *{list(args)!r}]\nmain()\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def one_error_line(r: subprocess.CompletedProcess) -> str:
    lines = [x for x in r.stderr.strip().splitlines() if x.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    return lines[0]


# ---- 9: sensitivity labels ----------------------------------------------------------------------

@pytest.mark.parametrize("bad", [9, 0, "very high", 2.5, True])
def test_an_upstream_sensitivity_that_is_not_an_integer_1_to_5_rejects_the_file(bad, shared_datasets, tmp_path):
    src = shared_datasets / "agentsocialbench" / "scenarios" / UPSTREAM_FILE
    text = src.read_text()
    assert '"sensitivity": 4' in text
    f = tmp_path / "mediated_comm" / "bad.json"
    f.parent.mkdir()
    f.write_text(text.replace('"sensitivity": 4', f'"sensitivity": {json.dumps(bad)}', 1))
    with pytest.raises(ScenarioError) as e:
        load_scenarios(str(tmp_path))
    msg = str(e.value)
    assert str(f) in msg and "user_profiles[0].social.identity_pronouns.sensitivity" in msg, msg
    assert f"must be an integer from 1 to 5, got {bad!r}" in msg, msg


def test_every_upstream_file_still_loads(shared_datasets):
    from localbench.benchmarks.asb.check import check_source

    rep = check_source(str(shared_datasets / "agentsocialbench" / "scenarios"))
    assert len(rep.loaded) == 372 and not rep.failed
    assert not [i for i in rep.issues if "sensitivity" in i.field]


def test_a_normalized_profile_sensitivity_out_of_range_is_rejected(tmp_path):
    src = REPO / "scenarios" / "asb-mini" / "hs" / "hs-holiday-rota.yaml"
    f = tmp_path / "hs" / "x.yaml"
    f.parent.mkdir()
    f.write_text(src.read_text().replace("morning clinic appointments, sensitivity: 5",
                                         "morning clinic appointments, sensitivity: very high"))
    with pytest.raises(ScenarioError, match=r"people\[1\]\.profile': health\.sensitivity must be an integer from 1 "
                                            r"to 5, got 'very high'") as e:
        load_scenarios(str(tmp_path))
    assert str(f) in str(e.value)


# ---- 11: ids that become paths -----------------------------------------------------------------

@pytest.mark.parametrize("run_id", ["../../x", "a/b", "..", ".", "a\\b", "x\ny", ""])
def test_a_run_id_that_is_not_one_plain_name_is_refused(run_id):
    with pytest.raises(SpecError, match=r"^flags: field 'run_id': the run id names the run directory inside 'out'"):
        load_spec(None, run_id=run_id)
    assert RunSpec.model_validate({"run_id": "my run-1.2"}).resolved_run_id == "my run-1.2"


def test_run_id_escaping_out_writes_nothing_outside(tmp_path):
    (tmp_path / "out").mkdir()
    r = cli("simulate", "--run-id", "../../escaped", "--out", str(tmp_path / "out"), "--no-progress")
    assert r.returncode == EXIT_BAD_INPUT and "field 'run_id'" in one_error_line(r)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out"]


@pytest.mark.parametrize("sid", ["../../evil", "a/b", "..", "x|y"])
def test_a_scenario_id_that_would_become_a_path_is_refused(sid, tmp_path):
    src = REPO / "scenarios" / "asb-mini" / "hs" / "hs-holiday-rota.yaml"
    doc = yaml.safe_load(src.read_text())
    doc["id"] = sid
    f = tmp_path / "hs" / "x.yaml"
    f.parent.mkdir()
    f.write_text(yaml.safe_dump(doc))
    with pytest.raises(ScenarioError, match=r"field 'id': scenario id") as e:
        load_scenarios(str(tmp_path))
    assert str(f) in str(e.value)


# ---- 10: filesystem errors ---------------------------------------------------------------------

def test_out_pointing_at_a_file_is_one_line_naming_it(tmp_path):
    f = tmp_path / "not-a-dir"
    f.write_text("keep me")
    r = cli("simulate", "--out", str(f), "--agent", "tiny-random", "--limit", "1", "--no-progress")
    assert r.returncode == EXIT_CANNOT_WRITE, r.stderr[-2000:]
    line = one_error_line(r)
    assert f"cannot write {f}" in line and "point --out at a directory" in line, line
    assert f.read_text() == "keep me"


def _mount_tmpfs(path: Path, size: str, ro: bool = False) -> None:
    path.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (",ro" if ro else "")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")


@pytest.fixture
def mounts():
    made: list[Path] = []
    yield made
    for m in reversed(made):
        if subprocess.run(["umount", str(m)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(m)], capture_output=True)  # a file still open: detach it


def test_a_read_only_out_directory_is_one_line_naming_it(tmp_path, mounts):
    ro = tmp_path / "ro"
    _mount_tmpfs(ro, "1m", ro=True)
    mounts.append(ro)
    r = cli("simulate", "--out", str(ro), "--agent", "tiny-random", "--limit", "1", "--no-progress")
    assert r.returncode == EXIT_CANNOT_WRITE, r.stderr[-2000:]
    line = one_error_line(r)
    assert f"cannot write {ro}" in line and "read-only" in line, line


def _fill(path: Path) -> None:
    """Fill the file system of ``path`` to the last byte."""
    fd = os.open(path / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        for chunk in (65536, 4096, 1):
            while True:
                try:
                    os.write(fd, b"\0" * chunk)
                except OSError as e:
                    assert e.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)


def test_a_full_disk_in_records_append_loses_nothing_and_resumes(tmp_path, mounts):
    d = tmp_path / "small"
    _mount_tmpfs(d, "256k")
    mounts.append(d)
    store = JsonlStore(d / "transcripts.jsonl")
    for i in range(3):
        assert store.append({"key": f"k{i}", "text": "x" * 100})
    before = (d / "transcripts.jsonl").read_bytes()
    _fill(d)
    with pytest.raises(StorageError, match=rf"cannot write {re.escape(str(d / 'transcripts.jsonl'))}: No space left "
                                           r"on device \(the disk is full: free space there and rerun"):
        store.append({"key": "k3", "text": "y" * 20000})
    assert (d / "transcripts.jsonl").read_bytes() == before  # no torn line left behind
    assert "k3" not in store
    (d / "filler").unlink()  # space again: the same store, and a new one (a rerun), carry on
    assert store.append({"key": "k3", "text": "y" * 20000})
    again = JsonlStore(d / "transcripts.jsonl")
    assert again.keys() == {"k0", "k1", "k2", "k3"}


def test_a_full_disk_in_the_response_cache_is_one_line_naming_it(tmp_path, mounts):
    from localbench.serving.cache import CacheStorageError, ResponseCache
    from localbench.serving.types import EngineError, RawCompletion

    d = tmp_path / "small"
    _mount_tmpfs(d, "256k")
    mounts.append(d)
    cache = ResponseCache(d / "cache.sqlite")
    cache.put("a", "m", RawCompletion(text="ok", finish_reason="stop", tokens_in=1, tokens_out=1))
    _fill(d)
    with pytest.raises(CacheStorageError, match=rf"cannot write {re.escape(str(d / 'cache.sqlite'))}: database or "
                                                r"disk is full \(the disk is full") as e:
        for i in range(200):
            cache.put(f"k{i}", "m", RawCompletion(text="z" * 4000, finish_reason="stop", tokens_in=1, tokens_out=1))
    assert isinstance(e.value, EngineError)  # the simulation that met it runs again; it is not recorded as failed
    (d / "filler").unlink()
    assert cache.get("a") is not None
    cache.close()


FAULT = """
import errno, localbench.runlog.store as _r
_orig, _n = _r.JsonlStore.append, [0]
def _append(self, record):
    if self.path.name == "transcripts.jsonl":
        _n[0] += 1
        if _n[0] == 2:  # the second transcript: half a line reaches the file, then the disk is full
            import builtins
            real_open = builtins.open
            class Torn:
                def __init__(self, f): self.f = f
                def __enter__(self): return self
                def __exit__(self, *a): self.f.close()
                def write(self, s):
                    self.f.write(s[: len(s) // 2]); self.f.flush()
                    raise OSError(errno.ENOSPC, "No space left on device")
                def __getattr__(self, name): return getattr(self.f, name)
            builtins.open = lambda *a, **k: Torn(real_open(*a, **k))
            try:
                return _orig(self, record)
            finally:
                builtins.open = real_open
    return _orig(self, record)
_r.JsonlStore.append = _append
"""


def test_a_run_stopped_by_a_full_disk_resumes_to_the_same_transcripts(tmp_path, tiny_dir):
    """OSError 28 at the 2nd transcript: one line naming the file, exit 3, the first record kept whole;
    the rerun runs only the rest, and the transcripts equal an uninterrupted run's."""
    args = ["simulate", "--agent", "tiny-random", "--engine", "hf", "--limit", "1", "--categories", "CD,MC",
            "--conditions", "L0", "--max-tokens", "24", "--max-rounds", "1", "--no-progress"]
    r = cli(*args, "--out", str(tmp_path / "a"), "--run-id", "r", pre=FAULT)
    run = tmp_path / "a" / "r"
    assert r.returncode == EXIT_CANNOT_WRITE, r.stderr[-3000:]
    line = one_error_line(r)
    assert f"cannot write {run / 'transcripts.jsonl'}: No space left on device" in line, line
    kept = [json.loads(x) for x in (run / "transcripts.jsonl").read_text().splitlines()]
    assert len(kept) == 1 and (run / "transcripts.jsonl").read_text().endswith("\n")
    r2 = cli(*args, "--out", str(tmp_path / "a"), "--run-id", "r")
    assert r2.returncode == 0, r2.stderr[-3000:]
    assert "1 of 2 simulations already done" in r2.stderr
    r3 = cli(*args, "--out", str(tmp_path / "b"), "--run-id", "r")
    assert r3.returncode == 0, r3.stderr[-3000:]

    def canon(p: Path) -> dict[str, dict]:
        out = {}
        for x in p.read_text().splitlines():
            t = json.loads(x)
            t.pop("finished_at"), t.pop("wall_s")
            for e in t["entries"]:
                if e.get("call"):
                    e["call"] = {k: v for k, v in e["call"].items() if k not in ("latency_s", "cached")}
            out[t["key"]] = t
        return out
    assert canon(run / "transcripts.jsonl") == canon(tmp_path / "b" / "r" / "transcripts.jsonl")


# ---- 12: simulations the spec lists but the transcripts lack -----------------------------------

def test_score_counts_the_missing_simulations_per_category(tmp_path):
    run = tmp_path / "asb-d9c285b0e4"
    shutil.copytree(RECORDED, run)
    lines = (run / "transcripts.jsonl").read_text().splitlines()
    keep = [x for x in lines if json.loads(x)["category"] not in ("CD",)]
    dropped_mc = [x for x in keep if json.loads(x)["category"] == "MC"][:1]
    keep = [x for x in keep if x not in dropped_mc]
    (run / "transcripts.jsonl").write_text("\n".join(keep) + "\n")
    r = cli("score", str(run))
    assert r.returncode == 0, r.stderr[-2000:]
    scores = json.loads((run / "scores.json").read_text())
    assert scores["missing_simulations"] == {"CD": 2, "MC": 1} and scores["planned_simulations"] == 14
    assert scores["notes"][0].startswith("3 of the 14 simulations the spec lists have no transcript"), scores["notes"]
    assert "warning: 3 of the 14 simulations" in r.stderr


def test_a_complete_run_writes_no_missing_fields(tmp_path):
    run = tmp_path / "asb-d9c285b0e4"
    shutil.copytree(RECORDED, run)
    assert cli("score", str(run)).returncode == 0
    scores = json.loads((run / "scores.json").read_text())
    assert "missing_simulations" not in scores and "planned_simulations" not in scores


# ---- 14: exit statuses, one table -------------------------------------------------------------

def test_the_exit_status_table_matches_the_code():
    from localbench import errors

    doc = (REPO / "docs" / "simulation.md").read_text()
    table = doc.split("## Exit statuses", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `?(\d+)`? \| (.+?) \|", table, re.M))
    assert {int(k) for k in rows} == {errors.EXIT_OK, errors.EXIT_INCOMPLETE, errors.EXIT_BAD_INPUT,
                                      errors.EXIT_CANNOT_WRITE, errors.EXIT_INTERRUPTED}
    assert "dead server" in rows[str(errors.EXIT_INCOMPLETE)]
    assert "exits with status 1" not in doc or "## Exit statuses" in doc
    from localbench.serving.types import EngineError

    assert EngineError("x").exit_code == errors.EXIT_INCOMPLETE


def test_a_dead_server_exits_1_as_the_docs_say(tmp_path):
    r = cli("run", "--base-url", "http://127.0.0.1:9/v1", "--agent", "tiny-random", "--judge", "tiny-random",
            "--limit", "1", "--categories", "CD", "--conditions", "L0", "--out", str(tmp_path), "--no-progress")
    assert r.returncode == EXIT_INCOMPLETE, r.stderr[-2000:]
    assert "cannot reach the OpenAI-compatible server at http://127.0.0.1:9/v1" in one_error_line(r)


# ---- 15: every stage ends with one line and its wall time -------------------------------------

def test_each_stage_ends_with_a_summary_line_and_its_wall_time(tmp_path, smollm2_dir):
    run = tmp_path / "asb-d9c285b0e4"
    shutil.copytree(RECORDED, run)
    timed = r"\(\d+\.\d s\)$"
    r = cli("judge", str(run))
    assert r.returncode == 0, r.stderr[-2000:]
    assert re.search(r"judging done: 0 calls made, 80 already done, 0 failed " + timed, r.stderr, re.M), r.stderr
    r = cli("score", str(run))
    assert re.search(r"scores: \d+ rows → .*scores\.json " + timed, r.stderr, re.M), r.stderr


CACHE_FULL = """
import sqlite3, localbench.serving.cache as _c
_orig, _n = _c.ResponseCache.put, [0]
def _put(self, key, model, completion):
    _n[0] += 1
    if _n[0] == 3:  # SQLite's answer when the disk is full
        raise _c._storage_error(sqlite3.OperationalError("database or disk is full"), self.path)
    return _orig(self, key, model, completion)
_c.ResponseCache.put = _put
"""


def test_a_full_disk_in_the_cache_mid_run_records_no_failed_simulation_and_resumes(tmp_path, tiny_dir):
    """The simulation whose call could not be cached is not written as failed (it was not its
    fault): the command says which file, exits 3, and the rerun runs it."""
    args = ["simulate", "--agent", "tiny-random", "--engine", "hf", "--limit", "1", "--categories", "CD,MC",
            "--conditions", "L0", "--max-tokens", "24", "--max-rounds", "2", "--concurrency", "1", "--no-progress",
            "--out", str(tmp_path), "--run-id", "r"]
    r = cli(*args, pre=CACHE_FULL)
    run = tmp_path / "r"
    assert r.returncode == EXIT_CANNOT_WRITE, r.stderr[-3000:]
    assert f"CacheStorageError: cannot write {run / 'cache.sqlite'}: database or disk is full" in r.stdout + r.stderr
    done = [json.loads(x) for x in (run / "transcripts.jsonl").read_text().splitlines()] \
        if (run / "transcripts.jsonl").exists() else []
    assert all(t["termination"] != "error" for t in done) and len(done) < 2
    r2 = cli(*args)
    assert r2.returncode == 0, r2.stderr[-3000:]
    keys = [json.loads(x)["key"] for x in (run / "transcripts.jsonl").read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 2
