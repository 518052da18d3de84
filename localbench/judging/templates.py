"""Rubric templates: jinja2 files under the top-level judges/ folder, hashed into every judgment."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import jinja2

from localbench.paths import REPO_ROOT


def judges_dir() -> Path:
    return REPO_ROOT / "judges"


@lru_cache(maxsize=None)
def _env(root: str) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(root), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=False, autoescape=False)


def render(name: str, **context) -> str:
    """Render judges/<name> (e.g. "asb/task.j2")."""
    return _env(str(judges_dir())).get_template(name).render(**context).strip()


def rubric_hash(name: str) -> str:
    return hashlib.sha256((judges_dir() / name).read_bytes()).hexdigest()[:16]
