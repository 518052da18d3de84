"""Rubric templates: jinja2 files, hashed into every judgment.

A rubric is named by its path under the top-level judges/ folder ("asb/task.j2"), or by an
absolute path for a benchmark that ships its rubrics elsewhere (a plug-in outside the package).
"""

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


def rubric_path(name: str) -> Path:
    """The file a rubric name refers to: judges/<name>, or the name itself when absolute."""
    p = Path(name)
    return p if p.is_absolute() else judges_dir() / name


def render(name: str, **context) -> str:
    """Render a rubric (e.g. "asb/task.j2", or an absolute path)."""
    path = rubric_path(name)
    root, template = (judges_dir(), name) if not Path(name).is_absolute() else (path.parent, path.name)
    return _env(str(root)).get_template(template).render(**context).strip()


def rubric_hash(name: str) -> str:
    return hashlib.sha256(rubric_path(name).read_bytes()).hexdigest()[:16]
