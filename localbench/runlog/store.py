"""The run's record files: append-only, keyed JSONL.

Each line is one finished unit of work (a simulation, a judge call) with a unique ``key``. A crash
can leave at most a truncated last line; it is cut off on open, everything before it is kept, and
a rerun skips every key already present.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Generic, Iterable, Iterator, TypeVar

from localbench.errors import STORAGE_ERRNOS, StorageError, UserError
from localbench.files import write_lines_atomic
from localbench.runlog.records import Record


class CorruptRecord(UserError, ValueError):
    """A line of a records file that is not JSON (not a torn last line, which is repaired)."""


class JsonlStore:
    """One JSONL file of records keyed by ``record[key_field]``."""

    def __init__(self, path: str | Path, key_field: str = "key"):
        self.path = Path(path)
        self.key_field = key_field
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_tail()
        self._keys = {r[self.key_field] for r in self.read()}

    def _repair_tail(self) -> None:
        """Drop a partial last line left by a crash mid-write (everything before it is kept)."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as f:
                f.truncate(cut)

    def read(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        with open(self.path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as e:
                        raise CorruptRecord(f"{self.path}:{n}: corrupt record ({e.msg}); delete that line and "
                                            "rerun to redo what it held") from e

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def keys(self) -> set[str]:
        return set(self._keys)

    def append(self, record: dict[str, Any]) -> bool:
        """Write one record (flushed and fsynced). Returns False if its key is already there."""
        key = record[self.key_field]
        line = json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n"
        with self._lock:
            if key in self._keys:
                return False
            size = self.path.stat().st_size if self.path.exists() else 0
            try:
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(line)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as e:  # disk full, read-only: keep every line before this one whole
                self._cut_back(size)
                if e.errno in STORAGE_ERRNOS:
                    raise StorageError.from_os_error(e, self.path) from e
                raise
            self._keys.add(key)
        return True

    def _cut_back(self, size: int) -> None:
        """Remove what a failed append left of its line (the file ends at a whole record again)."""
        try:
            if self.path.exists() and self.path.stat().st_size > size:
                with open(self.path, "r+b") as f:
                    f.truncate(size)
        except OSError:
            pass  # the next open drops a torn last line anyway (_repair_tail)


R = TypeVar("R", bound=Record)


class RecordStore(Generic[R]):
    """A JsonlStore of one record kind: typed on the way in and out."""

    def __init__(self, path: str | Path, model: type[R]):
        self.model = model
        self.store = JsonlStore(path)

    @property
    def path(self) -> Path:
        return self.store.path

    def read(self) -> Iterator[R]:
        for n, data in enumerate(self.store.read(), 1):
            yield self.model.parse(data, f"{self.path}:{n}")  # type: ignore[misc]

    def __contains__(self, key: str) -> bool:
        return key in self.store

    def keys(self) -> set[str]:
        return self.store.keys()

    def append(self, record: R) -> bool:
        return self.store.append(record.line())


def write_records(path: str | Path, records: Iterable[Record]) -> None:
    """Replace a whole records file at once (derived files such as scenario_scores.jsonl)."""
    write_lines_atomic(path, (json.dumps(r.line(), ensure_ascii=False) for r in records))


def read_records(path: str | Path, model: type[R]) -> list[R]:
    return list(RecordStore(path, model).read())
