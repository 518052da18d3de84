"""Response cache: SQLite, keyed by everything that determines an engine's output.

It stores raw completions (one per attempt), so validation and retry logic replay exactly:
rerunning an interrupted run pays only for calls that never finished. WAL mode and a busy timeout
make it safe for several processes (Slurm shards, a server and a client) writing at once.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path

from localbench.errors import StorageError
from localbench.serving.messages import keyed_messages
from localbench.serving.types import EngineError, GenerationRequest, ModelIdentity, RawCompletion

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    finish_reason TEXT NOT NULL,
    tokens_in INTEGER NOT NULL,
    tokens_out INTEGER NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(engine: str, identity: ModelIdentity, request: GenerationRequest, seed: int) -> str:
    """Hash of engine, model identity, messages, sampling parameters, schema and the attempt's seed.

    Messages with string contents are hashed as they are (the key they always had); an image part
    is hashed by its bytes, not by where it is stored (``messages.keyed_messages``).
    """
    payload = {
        "engine": engine,
        "model": identity.key(),
        "messages": keyed_messages(request.messages),
        "max_tokens": request.max_tokens,
        "temperature": round(float(request.temperature), 6),
        "seed": seed,
        "schema": request.output.schema_json if request.output is not None else None,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CacheStorageError(StorageError, EngineError):
    """The cache could not be written (disk full, read-only). An EngineError too: the simulation
    that met it is not the simulation's fault, so it is not recorded as failed and runs again."""

    exit_code = StorageError.exit_code


def _storage_error(e: sqlite3.Error, path: Path) -> CacheStorageError | None:
    """SQLite's way of saying a file cannot be written, as one line naming the cache file."""
    import errno

    msg = str(e).lower()
    if "full" in msg:
        code, what = errno.ENOSPC, "database or disk is full"
    elif "readonly" in msg or "read-only" in msg:
        code, what = errno.EROFS, "attempt to write a read-only database"
    elif "unable to open" in msg or "disk i/o" in msg:
        code, what = errno.EACCES, str(e)
    else:
        return None
    return CacheStorageError(str(StorageError.from_os_error(OSError(code, what), path)))


class ResponseCache:
    """A process- and thread-safe SQLite store of raw completions."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StorageError.from_os_error(e, self.path.parent) from e
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        try:
            with self._conn() as c:
                c.execute(_SCHEMA)
        except sqlite3.Error as e:
            err = _storage_error(e, self.path)
            if err is None:
                raise
            raise err from e

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> RawCompletion | None:
        row = self._conn().execute(
            "SELECT text, finish_reason, tokens_in, tokens_out FROM completions WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return RawCompletion(text=row[0], finish_reason=row[1], tokens_in=row[2], tokens_out=row[3])

    def put(self, key: str, model: str, completion: RawCompletion) -> None:
        if completion.finish_reason == "error":
            return  # engine errors are not answers; never replay them
        try:
            self._conn().execute(
                "INSERT OR IGNORE INTO completions VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, model, completion.text, completion.finish_reason, completion.tokens_in,
                 completion.tokens_out, time.time()),
            )
        except sqlite3.Error as e:  # the row is not stored (SQLite rolls the statement back)
            err = _storage_error(e, self.path)
            if err is None:
                raise
            raise err from e

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM completions").fetchone()[0]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


def default_cache_path() -> Path:
    from localbench.paths import cache_dir

    return cache_dir() / "responses.sqlite"
