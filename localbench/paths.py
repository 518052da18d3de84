"""Where localbench keeps things on disk: the repo's editable folders and the user cache."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """LOCALBENCH_CACHE, else $XDG_CACHE_HOME/localbench, else ~/.cache/localbench."""
    env = os.environ.get("LOCALBENCH_CACHE")
    if env:
        p = Path(env)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        p = Path(base) / "localbench"
    p.mkdir(parents=True, exist_ok=True)
    return p


def presets_dir() -> Path:
    """The shipped model presets' folder (the repository's top-level serving/)."""
    return REPO_ROOT / "serving"


def presets_dirs() -> list[Path]:
    """Where model presets are read, first to last: the folders LOCALBENCH_PRESETS names (one, or
    several separated by the path separator), then the shipped ones. A user's folder adds to the
    shipped presets, and a preset named in an earlier folder wins over one of the same name later."""
    user = [Path(p).expanduser() for p in os.environ.get("LOCALBENCH_PRESETS", "").split(os.pathsep) if p]
    return [*user, presets_dir()]
