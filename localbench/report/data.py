"""Read a finished run directory (scores.json, spec.yaml, scenario_scores.jsonl) for reporting.

The report is rebuilt from these files alone: nothing here imports an engine, a benchmark or a
model. Bad files raise UserError naming the file (and the line, for JSONL).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from localbench.errors import UserError
from localbench.report.metrics import LADDER
from localbench.scores import ScoreRow, Scores

SCORES_FILE = "scores.json"
SPEC_FILE = "spec.yaml"
SCENARIO_FILE = "scenario_scores.jsonl"


class ScenarioScore(BaseModel):
    """One simulation's per-scenario metric values (a line of scenario_scores.jsonl)."""

    model_config = ConfigDict(extra="allow")

    key: str
    scenario: str
    category: str
    level: str
    seed_index: int = 0
    model: str
    judge: str = ""
    domain_pair: str | None = None  # CD only, "source→target"
    metrics: dict[str, float | None]
    failed: list[str] = []
    unscored: str | None = None  # why its leakage could not be measured (crash, not judged, ...)


@dataclass
class RunData:
    """Everything the report shows, loaded once."""

    path: Path
    scores: Scores
    spec_doc: dict[str, Any] = field(default_factory=dict)  # the whole spec.yaml
    scenarios: list[ScenarioScore] | None = None  # None when scenario_scores.jsonl is absent
    notes: list[str] = field(default_factory=list)  # what was missing while loading

    @property
    def run_id(self) -> str:
        return self.scores.run_id or self.path.name

    @property
    def spec(self) -> dict[str, Any]:
        s = self.spec_doc.get("spec")
        return s if isinstance(s, dict) else {}

    def models(self) -> list[str]:
        """Agent models in the order they first appear in scores.json."""
        return list(dict.fromkeys(r.model for r in self.scores.rows))

    def judges(self) -> list[str]:
        return list(dict.fromkeys(r.judge for r in self.scores.rows))

    def levels(self) -> list[str]:
        """Levels in ladder order (L0, L1, L2), then spec order, then first appearance."""
        seen = list(dict.fromkeys(r.level for r in self.scores.rows))
        spec_levels = [lv for lv in self.spec.get("levels") or [] if lv in seen]
        ladder = [lv for lv in LADDER if lv in seen]
        rest = [lv for lv in spec_levels if lv not in ladder] + [lv for lv in seen if lv not in ladder and lv not in spec_levels]
        return ladder + rest

    def categories(self) -> list[str]:
        return list(dict.fromkeys(r.category for r in self.scores.rows))

    def row(self, metric: str, model: str, level: str, category: str, judge: str | None = None) -> ScoreRow | None:
        """The ungrouped row for this cell, or None. With one judge in the run, ``judge`` may be omitted."""
        for r in self.scores.rows:
            if (r.metric == metric and r.model == model and r.level == level and r.category == category
                    and r.group == "" and (judge is None or r.judge == judge)):
                return r
        return None


def load_scores(path: Path) -> Scores:
    if not path.is_file():
        raise UserError(f"{path}: no scores file (the score stage of a run writes it)")
    try:
        return Scores.model_validate_json(path.read_text())
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "(top level)"
        raise UserError(f"{path}: invalid scores file at '{where}': {err['msg']}") from e
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read scores file: {e}") from e


def load_spec_doc(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise UserError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(doc, dict):
        raise UserError(f"{path}: expected a mapping with a 'spec' key")
    return doc


def load_scenario_scores(path: Path) -> list[ScenarioScore] | None:
    if not path.is_file():
        return None
    out: list[ScenarioScore] = []
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(ScenarioScore.model_validate(json.loads(line)))
            except json.JSONDecodeError as e:
                if i > 1 and not line.endswith("\n"):
                    break  # a torn last line from an interrupted writer: ignore it
                raise UserError(f"{path}:{i}: not valid JSON: {e.msg}") from e
            except ValidationError as e:
                err = e.errors()[0]
                where = ".".join(str(x) for x in err["loc"])
                raise UserError(f"{path}:{i}: field '{where}': {err['msg']}") from e
    return out


def load_run(run_dir: str | Path) -> RunData:
    """Load a run directory; scores.json is required, the other files are optional (noted)."""
    p = Path(run_dir)
    if not p.is_dir():
        raise UserError(f"{p}: not a directory")
    scores = load_scores(p / SCORES_FILE)
    notes: list[str] = []
    spec_doc = load_spec_doc(p / SPEC_FILE)
    if spec_doc is None:
        notes.append(f"{SPEC_FILE} is absent: spec summary and provenance are not shown.")
    scen = load_scenario_scores(p / SCENARIO_FILE)
    if scen is None:
        notes.append(f"{SCENARIO_FILE} is absent: the domain-pair heatmap is skipped and pooled leakage has no CI.")
    return RunData(path=p, scores=scores, spec_doc=spec_doc or {}, scenarios=scen, notes=notes)
