"""Render the simulation's prompt templates (prompts/*.j2) and hash them into the run.

Templates are files, not strings in code, so a reader can see every word a model is shown; their
hashes go into spec.yaml and every transcript, so two runs with different prompts never pass for
the same experiment. Rendering is strict: a missing variable is an error, not an empty string.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from localbench.rundir import file_hashes

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(PROMPTS_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(template: str, **context: Any) -> str:
    """One template rendered with ``context``; runs of blank lines collapsed to one, ends trimmed."""
    return re.sub(r"\n{3,}", "\n\n", _env().get_template(template).render(**context)).strip()


def template_files() -> list[Path]:
    return sorted(PROMPTS_DIR.glob("*.j2"))


def template_hashes() -> dict[str, str]:
    """sha256 (16 hex) of each template file, by file name."""
    return file_hashes(template_files(), root=PROMPTS_DIR)


@lru_cache(maxsize=1)
def prompt_set_hash() -> str:
    """One hash over all templates (names and contents): recorded with every transcript."""
    h = hashlib.sha256()
    for name, digest in sorted(template_hashes().items()):
        h.update(f"{name}={digest}\n".encode())
    return h.hexdigest()[:16]
