"""Atomic file writes: write a temp file beside the target, fsync it, rename it over the target.

A reader (or a crash) never sees half a file: the path holds either the old content or the new.
A leaf: imports nothing from localbench.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import IO


def _open_temp(path: Path) -> tuple[Path, IO[bytes]]:
    """A new, uniquely named temp file in ``path``'s directory, created with the default
    permissions (0o666 less the umask, as a plain ``open`` would)."""
    while True:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        return tmp, os.fdopen(fd, "wb")


def _write_atomic(path: str | Path, chunks: Iterable[bytes], mode: int | None) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp, f = _open_temp(p)
    try:
        with f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            tmp.chmod(mode)
        tmp.replace(p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return p


def write_atomic(path: str | Path, data: str | bytes, *, mode: int | None = None,
                 encoding: str = "utf-8") -> Path:
    """Replace ``path`` with ``data`` atomically (creating its directory); ``mode``: its permissions."""
    return _write_atomic(path, [data.encode(encoding) if isinstance(data, str) else data], mode)


def write_lines_atomic(path: str | Path, lines: Iterable[str], *, mode: int | None = None,
                       encoding: str = "utf-8") -> Path:
    """Replace ``path`` atomically with ``lines``, each followed by a newline (e.g. a JSONL file).
    ``lines`` may be a generator: if it raises, the old file is left as it was."""
    return _write_atomic(path, ((line + "\n").encode(encoding) for line in lines), mode)
