"""Read a finished run directory (scores.json, spec.yaml, scenario_scores.jsonl) for reporting.

The report is rebuilt from these files alone and the benchmark's design (its axes' order, its
metric catalogue): nothing here imports an engine, a benchmark's code or a model. Bad files raise
UserError naming the file (and the line, for JSONL).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from localbench.design import ALL, Design
from localbench.errors import UserError
from localbench.registry import UnknownBenchmark, benchmark_class, design_of
from localbench.report.plan import ReportPlan
from localbench.runlog import RunFiles, ScenarioScore, read_records
from localbench.scores import SCORES_VERSION, ScoreRow, Scores
from localbench.spec import with_todays_names

SCORES_FILE = RunFiles.SCORES
SPEC_FILE = RunFiles.SPEC
SCENARIO_FILE = RunFiles.SCENARIO_SCORES


@dataclass
class RunData:
    """Everything the report shows, loaded once."""

    path: Path
    scores: Scores
    design: Design
    spec_doc: dict[str, Any] = field(default_factory=dict)  # the whole spec.yaml
    scenarios: list[ScenarioScore] | None = None  # None when scenario_scores.jsonl is absent
    notes: list[str] = field(default_factory=list)  # what was missing while loading

    @property
    def run_id(self) -> str:
        return self.scores.run_id or self.path.name

    def report_plan(self) -> ReportPlan:
        """The benchmark's own tables and figures (its plug-in is imported now: they need matplotlib)."""
        return benchmark_class(self.design.name)().report_plan()

    @property
    def spec(self) -> dict[str, Any]:
        """The recorded spec's fields (``levels``, the name of ``conditions`` in runs recorded before
        the rename, read as ``conditions``)."""
        s = self.spec_doc.get("spec")
        return with_todays_names(s) if isinstance(s, dict) else {}

    def models(self) -> list[str]:
        """Agent models in the order they first appear in scores.json."""
        return list(dict.fromkeys(r.model for r in self.scores.rows))

    def judges(self) -> list[str]:
        return list(dict.fromkeys(r.judge for r in self.scores.rows))

    def conditions(self) -> list[str]:
        """Conditions in the condition axis's order (the design's), then spec order, then first appearance."""
        seen = list(dict.fromkeys(r.condition for r in self.scores.rows))
        known = [lv for lv in self.design.condition.values if lv in seen]
        spec_conditions = [lv for lv in self.spec.get("conditions") or [] if lv in seen and lv not in known]
        return known + spec_conditions + [lv for lv in seen if lv not in known and lv not in spec_conditions]

    def categories(self) -> list[str]:
        return list(dict.fromkeys(r.category for r in self.scores.rows))

    def ordered_categories(self, keys) -> list[str]:
        """``keys`` in the category axis's order, others after (sorted); never ALL."""
        keys = [k for k in keys if k != ALL]
        known = [c for c in self.design.categories if c in keys]
        return known + sorted(k for k in set(keys) if k not in known)

    def row(self, metric: str, model: str, condition: str, category: str, judge: str | None = None) -> ScoreRow | None:
        """The ungrouped row for this cell, or None. With one judge in the run, ``judge`` may be omitted."""
        for r in self.scores.rows:
            if (r.metric == metric and r.model == model and r.condition == condition and r.category == category
                    and r.group == "" and (judge is None or r.judge == judge)):
                return r
        return None


def load_scores(path: Path) -> Scores:
    if not path.is_file():
        raise UserError(f"{path}: no scores file (the score stage of a run writes it)")
    try:
        text = path.read_text()
        scores = Scores.model_validate_json(text)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "(top level)"
        raise UserError(f"{path}: invalid scores file at '{where}': {err['msg']}") from e
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read scores file: {e}") from e
    if scores.version > SCORES_VERSION:
        raise UserError(f"{path}: scores format version {scores.version} is newer than this localbench reads "
                        f"({SCORES_VERSION}); upgrade localbench to report it")
    return scores


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
    return read_records(path, ScenarioScore)


def load_run(run_dir: str | Path, design: Design | None = None) -> RunData:
    """Load a run directory; scores.json is required, the other files are optional (noted).
    ``design``: the benchmark's (default: the one scores.json names)."""
    p = Path(run_dir)
    if not p.is_dir():
        raise UserError(f"{p}: not a directory")
    scores = load_scores(p / SCORES_FILE)
    if design is None:
        try:
            design = design_of(scores.benchmark)
        except UnknownBenchmark as e:
            raise UserError(f"{p / SCORES_FILE}: {e}") from e
    notes: list[str] = []
    spec_doc = load_spec_doc(p / SPEC_FILE)
    if spec_doc is None:
        notes.append(f"{SPEC_FILE} is absent: spec summary and provenance are not shown.")
    scen = load_scenario_scores(p / SCENARIO_FILE)
    if scen is None:
        notes.append(f"{SCENARIO_FILE} is absent: per-group figures are skipped and pooled values have no CI.")
    return RunData(path=p, scores=scores, design=design, spec_doc=spec_doc or {}, scenarios=scen, notes=notes)
