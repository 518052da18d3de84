"""One run directory, one command at a time: a second process is refused at once, naming the holder;
a lock left by a killed process is taken over with a note; shard directories lock separately."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

HOLD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from localbench.runlog import run_lock
    with run_lock(sys.argv[1], command="holder-under-test"):
        Path(sys.argv[2]).write_text("held")
        time.sleep(120)
""")


def _hold(run_dir: Path, ready: Path) -> subprocess.Popen:
    """A real second process that takes the run's lock and keeps it until it is killed."""
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir), str(ready)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert p.poll() is None, p.stderr.read()
        assert time.monotonic() < deadline, "the holder never took the lock"
        time.sleep(0.05)
    return p


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def holder(tmp_path):
    procs: list[subprocess.Popen] = []

    def start(run_dir: Path, name: str = "ready") -> subprocess.Popen:
        procs.append(_hold(run_dir, tmp_path / name))
        return procs[-1]

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def test_a_second_command_on_a_locked_run_exits_1_at_once_naming_the_holder(tmp_path, holder):
    run = tmp_path / "runs" / "r1"
    p = holder(run)
    t0 = time.monotonic()
    r = _cli("simulate", "--out", str(tmp_path / "runs"), "--run-id", "r1", "--agent", "tiny-random",
             "--limit", "1", "--no-progress")
    assert r.returncode == 1, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"pid {p.pid} on {socket.gethostname()}" in lines[0] and "holder-under-test" in lines[0]
    assert "since 20" in lines[0]
    assert time.monotonic() - t0 < 60
    assert not (run / "transcripts.jsonl").exists()  # the refused command wrote nothing


def test_a_lock_left_by_a_killed_process_is_taken_over_with_a_note(tmp_path, holder):
    from localbench.runlog import run_lock

    run = tmp_path / "r"
    p = holder(run)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    notes: list[str] = []
    with run_lock(run, command="second", note=notes.append):
        assert len(notes) == 1 and f"left by pid {p.pid}" in notes[0] and "no longer running" in notes[0]
    notes.clear()
    with run_lock(run, command="third", note=notes.append):  # released cleanly: nothing to take over
        assert notes == []


def test_shards_lock_their_own_directories_and_the_lock_is_reentrant(tmp_path, holder):
    from localbench.runlog import RunLocked, run_lock

    holder(tmp_path / "run" / "shards" / "0", "ready0")
    with run_lock(tmp_path / "run" / "shards" / "1"):  # another shard of the same array runs in parallel
        with run_lock(tmp_path / "run" / "shards" / "1"):  # `run` holds it across stages that ask again
            pass
    with pytest.raises(RunLocked, match="holder-under-test"):
        with run_lock(tmp_path / "run" / "shards" / "0"):
            pass
