"""localbench.files: atomic replace-by-rename writes."""

from __future__ import annotations

import os
import stat

import pytest

from localbench.files import write_atomic, write_lines_atomic


def test_write_atomic_replaces_content_and_leaves_no_temp(tmp_path):
    path = tmp_path / "sub" / "out.json"  # the directory is created
    write_atomic(path, "old")
    write_atomic(path, "new ✓")
    assert path.read_text(encoding="utf-8") == "new ✓"
    assert os.listdir(path.parent) == ["out.json"]


def test_write_atomic_bytes(tmp_path):
    path = tmp_path / "blob.bin"
    write_atomic(path, b"\x00\xff")
    assert path.read_bytes() == b"\x00\xff"
    assert os.listdir(tmp_path) == ["blob.bin"]


def test_write_atomic_applies_mode(tmp_path):
    path = tmp_path / "job.sbatch"
    write_atomic(path, "#!/bin/bash\n", mode=0o755)
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    write_atomic(path, "#!/bin/bash\necho\n", mode=0o640)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_write_atomic_default_mode_follows_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o644


def test_write_lines_atomic(tmp_path):
    path = tmp_path / "rows.jsonl"
    write_lines_atomic(path, (f'{{"i": {i}}}' for i in range(3)))
    assert path.read_text() == '{"i": 0}\n{"i": 1}\n{"i": 2}\n'
    assert os.listdir(tmp_path) == ["rows.jsonl"]


def test_failure_while_producing_lines_keeps_the_old_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("old\n")

    def lines():
        yield "first"
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        write_lines_atomic(path, lines())
    assert path.read_text() == "old\n"  # a naive open(path, "w") would have truncated it
    assert os.listdir(tmp_path) == ["rows.jsonl"]  # and the temp file is gone


def test_failure_on_replace_removes_the_temp_file(tmp_path, monkeypatch):
    from pathlib import Path

    path = tmp_path / "x.txt"
    path.write_text("old")

    def fail(self, target):
        raise OSError("rename failed")

    monkeypatch.setattr(Path, "replace", fail)
    with pytest.raises(OSError, match="rename failed"):
        write_atomic(path, "new")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["x.txt"]
