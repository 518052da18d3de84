"""A benchmark's prompt templates: a folder of jinja files, rendered strictly and hashed into the run.

Templates are files, not strings in code, so a reader can see every word a model is shown; their
hashes go into spec.yaml and every transcript, so two runs with different prompts never pass for
the same experiment. Rendering is strict: a missing variable is an error, not an empty string.
"""

from __future__ import annotations

import hashlib
import re
from functools import cached_property
from pathlib import Path
from typing import Any

import jinja2

from localbench.runlog import file_hashes


class PromptSet:
    """The templates (*.j2) of one folder."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    @cached_property
    def _env(self) -> jinja2.Environment:
        return jinja2.Environment(loader=jinja2.FileSystemLoader(str(self.folder)), undefined=jinja2.StrictUndefined,
                                  trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False, autoescape=False)

    def render(self, template: str, **context: Any) -> str:
        """One template rendered with ``context``; runs of blank lines collapsed to one, ends trimmed."""
        return re.sub(r"\n{3,}", "\n\n", self._env.get_template(template).render(**context)).strip()

    def files(self) -> list[Path]:
        return sorted(self.folder.glob("*.j2"))

    def hashes(self) -> dict[str, str]:
        """sha256 (16 hex) of each template file, by file name."""
        return file_hashes(self.files(), root=self.folder)

    def set_hash(self) -> str:
        """One hash over all templates (names and contents): recorded with every transcript."""
        h = hashlib.sha256()
        for name, digest in sorted(self.hashes().items()):
            h.update(f"{name}={digest}\n".encode())
        return h.hexdigest()[:16]
