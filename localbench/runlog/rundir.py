"""A run directory: runs/<run-id>/ with its spec.yaml and its record stores.

spec.yaml records the resolved spec plus everything needed to reproduce it: package versions,
model identities and revisions, and the hashes of every prompt, rubric and schema used.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from localbench.errors import UserError
from localbench.files import write_atomic
from localbench.runlog.layout import RunPaths
from localbench.runlog.provenance import package_versions
from localbench.runlog.records import Judgment, ScenarioScore, Transcript
from localbench.runlog.store import RecordStore
from localbench.spec import RECORDED, RunSpec


RESOLVED_MODELS = "resolved_models"
"""spec.yaml's section beside ``spec`` naming the preset every role ran with: ``spec.models`` keeps a
role left to its default as null (so the run id, a hash of the spec as given, stays the same), and
this section says which preset that default was."""


class RunMismatch(UserError):
    """A run directory holds a run made with different settings than the one asked to resume it."""


class RunDir(RunPaths):
    """Paths and record stores of one run (the directory is made if it is not there)."""

    def __init__(self, path: str | Path):
        super().__init__(path)
        self.path.mkdir(parents=True, exist_ok=True)

    def transcripts(self) -> RecordStore[Transcript]:
        return RecordStore(self.transcripts_path, Transcript)

    def judgments(self) -> RecordStore[Judgment]:
        return RecordStore(self.judgments_path, Judgment)

    def scenario_scores(self) -> RecordStore[ScenarioScore]:
        return RecordStore(self.scenario_scores_path, ScenarioScore)

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
            RESOLVED_MODELS: spec.resolved_models(),
            "created": old.get("created", now),
            "resumed": old.get("resumed", []) + ([now] if old else []),
            "versions": package_versions(),
            "fingerprint": {**(old.get("fingerprint") or {}), **(fingerprint or {})},
            **{k: v for k, v in provenance.items() if k != RESOLVED_MODELS},  # an old copy is written anew
        }
        write_atomic(self.spec_file, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))

    def check_same_run(self, spec: RunSpec, fingerprint: dict[str, str] | None = None) -> None:
        """RunMismatch if this directory holds a run made with other settings (see ``write_spec``);
        cheap, so a stage can ask before it loads any model."""
        if self.spec_file.exists():
            self._check_same_run(yaml.safe_load(self.spec_file.read_text()) or {}, spec, fingerprint or {})

    def _check_same_run(self, old: dict[str, Any], spec: RunSpec, fingerprint: dict[str, str]) -> None:
        try:
            before = RunSpec.model_validate(old.get("spec") or {}, context={RECORDED: True})
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
        doc = self.read_spec()
        doc[section] = json.loads(json.dumps(data, default=str))  # plain YAML types only
        write_atomic(self.spec_file, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))

    def read_spec(self) -> dict[str, Any]:
        if not self.spec_file.exists():
            raise FileNotFoundError(f"{self.spec_file}: not a run directory (no spec.yaml)")
        return yaml.safe_load(self.spec_file.read_text())
