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
    """The model presets folder (top-level serving/), overridable with LOCALBENCH_PRESETS."""
    return Path(os.environ.get("LOCALBENCH_PRESETS") or REPO_ROOT / "serving")
