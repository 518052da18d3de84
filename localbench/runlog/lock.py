"""The lock of a run directory: one command writes a run at a time."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from localbench.errors import UserError
from localbench.runlog.layout import RunPaths


class RunLocked(UserError):
    """Another process is working on this run directory (exit status 1: wait, then rerun)."""

    exit_code = 1


# A Slurm shard's run directory (RUN/shards/<i>/) has its own lock, so the tasks of an array lock
# only their own files and run in parallel.

_held: dict[Path, list[Any]] = {}  # lock file -> [open file, depth]: one process re-enters its own lock
_held_guard = threading.Lock()


def _holder_line(info: dict[str, Any]) -> str:
    return (f"pid {info.get('pid', '?')} on {info.get('host', '?')} since {info.get('since', '?')} "
            f"({info.get('command', '?')})")


def _read_holder(f) -> dict[str, Any]:
    try:
        f.seek(0)
        doc = json.loads(f.read() or "{}")
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _command_line() -> str:
    prog = "localbench" if "localbench" in Path(sys.argv[0]).as_posix() else Path(sys.argv[0]).name
    return " ".join([prog, *sys.argv[1:]])


def _pid_alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def run_lock(path: str | Path, command: str | None = None, note=None) -> Iterator[None]:
    """Hold the run directory ``path`` for this process: another process asking for it (another
    ``localbench`` command on the same run) gets RunLocked at once, naming the holder.

    An advisory ``fcntl.flock`` on ``path/.lock``: the kernel drops it when its process ends, however
    it ends, so a lock is never stale; the file also records its holder (pid, host, command, since).
    A record left by a holder that died (kill -9, a lost node) is taken over with a note through
    ``note`` (default: a line on stderr). Re-entrant within a process (``run`` holds it across its
    stages, each of which asks for it too).
    """
    import fcntl

    d = Path(path)
    d.mkdir(parents=True, exist_ok=True)
    lock_file = RunPaths(d).lock_path.resolve()
    with _held_guard:
        if lock_file in _held:
            _held[lock_file][1] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            with _held_guard:
                _held[lock_file][1] -= 1
        return
    f = open(lock_file, "a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            info = _read_holder(f)
            raise RunLocked(f"{d} is in use by {_holder_line(info) if info else 'another process'}: two commands "
                            "on one run would both write it; wait for that one to end (or stop it), then rerun") from e
        left = _read_holder(f)
        if left:  # its holder ended without releasing it (killed): the kernel dropped the lock
            here = left.get("host") == socket.gethostname()
            why = "which is no longer running" if here and not _pid_alive(left.get("pid")) else "which is gone"
            (note or (lambda m: print(m, file=sys.stderr, flush=True)))(
                f"note: taking over the lock of {d} left by {_holder_line(left)}, {why}")
        f.seek(0)
        f.truncate()
        f.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                            "command": (command or _command_line())[:500],
                            "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}))
        f.flush()
        with _held_guard:
            _held[lock_file] = [f, 1]
        try:
            yield
        finally:
            with _held_guard:
                del _held[lock_file]
            with contextlib.suppress(OSError):
                f.seek(0)
                f.truncate()  # released cleanly: no holder left to take over
                f.flush()
    finally:
        f.close()  # closing drops the flock
