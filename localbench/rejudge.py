"""`localbench judges rejudge RUN_DIR --judges ...`: judge a finished run again with other judges.

Each judge's labels go to runs/<id>/judges/<preset>/judgments.jsonl (same records, keys and
rubrics as the run's own judge stage: ``pipeline.judge_transcripts``), then the benchmark's metric
code scores them into scenario_scores.jsonl and scores.json beside it. On a planted run the
synthetic judges ``oracle`` and ``noisy:FPR,FNR`` label it from its construction labels instead. The run's own
judgments.jsonl stays untouched and counts as the judge its judge stage recorded. It sits beside the
pipeline (not in judging/) because it reads run directories and calls the run's benchmark.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localbench.errors import UserError
from localbench.files import write_atomic
from localbench.judging.rubrics import judges_dir
from localbench.judging.sanity import check_judgments, self_judging_warning
from localbench.judging.synthetic import SyntheticJudge, parse_synthetic
from localbench.pipeline import Resolved, judge_transcripts, read_transcripts, spec_of
from localbench.runlog import (Judgment, RecordStore, RunDir, RunPaths, ScenarioScore, Transcript, changed_files,
                               file_hashes, judge_of, run_lock)
from localbench.serving.client import StructuredClient
from localbench.serving.types import ModelIdentity, identity_changes


@dataclass
class RunJudgments:
    """One judge's labels of one run, and where they came from."""

    judge: str
    path: Path  # the judgments.jsonl
    own: bool  # the run's own judge stage (not a rejudge)
    records: list[Judgment]


@dataclass
class LoadedRun:
    """A finished run's spec, benchmark, transcripts and scenarios, read once for scoring it many times."""

    path: Path
    spec: Any
    benchmark: Any
    transcripts: list[Transcript]
    scenarios: dict[str, Any]

    @classmethod
    def read(cls, run_dir: str | Path) -> "LoadedRun":
        return cls.of(Resolved(spec_of(run_dir)), run_dir)

    @classmethod
    def of(cls, res: Resolved, run_dir: str | Path) -> "LoadedRun":
        """The run of a command that resolved its spec and scenarios already."""
        return cls(Path(run_dir), res.spec, res.bm, read_transcripts(RunDir(run_dir)), res.scenarios)

    def score(self, judge: str, judgments: list[Judgment], leakage_only: bool) -> list[ScenarioScore]:
        """Per-simulation metrics from these judgments by the benchmark's code."""
        from localbench.scoring import keep_metrics

        bm = self.benchmark
        records = bm.scenario_scores(self.transcripts, judgments, self.scenarios, judge)
        return keep_metrics(records, bm.design.is_leakage) if leakage_only else records


def run_judgments(run: LoadedRun) -> list[RunJudgments]:
    """The run's own judgments, a planted run's truth, and every rejudge under runs/<id>/judges/."""
    bm = run.benchmark
    out = []
    paths = RunPaths(run.path)
    if paths.judgments_path.exists():
        rd = RunDir(run.path)
        name = run.spec.rule_judge or judge_of(run.spec, rd)  # a rule judge labelled it, not the preset
        out.append(RunJudgments(name, rd.judgments_path, True, list(rd.judgments().read())))
    truth = bm.planted_judgments(run.transcripts)
    if truth:
        out.append(RunJudgments(bm.planted_judge, paths.transcripts_path, False, truth))
    if paths.judges_dir.is_dir():
        for d in sorted(paths.judges_dir.iterdir()):
            f = RunPaths(d).judgments_path
            if f.exists() and not any(r.judge == d.name for r in out):
                out.append(RunJudgments(d.name, f, False, list(RecordStore(f, Judgment).read())))
    return out


async def rejudge_one(run_dir: str | Path, judge: str, leakage_only: bool = True,
                      client: StructuredClient | None = None, show_progress: bool | None = None,
                      judge_eval: str | None = None, run: LoadedRun | None = None) -> Path:
    """Judge the run with ``judge``; returns runs/<id>/judges/<judge>/. ``judge_eval`` (default: the
    run spec's): the eval that measured ``judge``; below its cheater floor there is a judge warning.
    ``run``: the run as the command read it once."""
    from localbench.judging.runner import JUDGE_TEMPERATURE
    from localbench.runtime.clients import client_for
    from localbench.scoring import aggregate, write_scores

    run = run or LoadedRun.read(run_dir)
    rd = RunDir(run_dir)
    if not run.transcripts:
        raise UserError(f"{rd.path}: no transcripts to judge")
    synthetic = parse_synthetic(judge) if client is None else None
    if synthetic is not None:
        return _synthetic_rejudge(run, synthetic, leakage_only, judge_eval)
    spec = run.spec.with_model(run.spec.design.judge_role, judge)
    out = RunPaths(run_dir).judge_dir(judge)
    store = RunDir(out).judgments()
    own = client is None
    client = client or client_for(spec, spec.design.judge_role, rd.path)
    try:
        # what a run's judge stage records in spec.yaml: the model behind the preset, the engine, and
        # the hash of every rubric; written before judging, so a crashed rejudge still says who judged
        info = {"judge": judge, "leakage_only": leakage_only, "identity": dict(client.backend.identity.__dict__),
                "engine": client.backend.describe(),
                "rubrics": file_hashes(run.benchmark.rubric_files(), judges_dir()),
                "max_tokens": spec.judge_max_tokens, "temperature": JUDGE_TEMPERATURE}
        _keep_one_judge_model(out, store, info, client.backend.identity)
        _write_info(out, info)
        summary = await judge_transcripts(spec, run.transcripts, run.scenarios, client, store,
                                          leakage_only=leakage_only, show_progress=show_progress)
    finally:
        if own:
            await client.aclose()
    _write_info(out, {**info, "calls": summary.total, "done": summary.done, "skipped": summary.skipped,
                      "failed": summary.failed, "too_long": summary.too_long})
    judgments = list(store.read())
    records = run.score(judge, judgments, leakage_only)
    scores = aggregate(records, run.benchmark.design, spec.resolved_run_id, judge, seed=spec.seed)
    scores.judge_warnings = check_judgments(judgments, run.benchmark.judge_checks(), judge)
    if own := self_judging_warning(spec, judgments, run.benchmark.judge_checks(), judge, run.benchmark.scripted_backend):
        scores.judge_warnings.append(own)
    _trust(run, scores, judgments, judge_eval)
    scores.judge_warnings += _floor_warnings(run, judge, judge_eval)
    write_scores(out, records, scores)
    return out


def _floor_warnings(run: LoadedRun, judge: str, judge_eval: str | None) -> list:
    """The judge's warnings from the evals that measured it (``judge_eval``, else the run spec's)."""
    from localbench.judging.reliability import floor_judge_warnings
    from localbench.judging.trust import eval_dirs

    return [w for ev in eval_dirs(judge_eval or run.spec.judge_eval) for w in floor_judge_warnings(str(ev), judge)]


def _trust(run: LoadedRun, scores, judgments: list[Judgment], judge_eval: str | None) -> None:
    """The rejudge's "How far to trust these numbers" (``judging.trust``) and its unmeasured-judge warnings."""
    from localbench.judging.trust import run_trust

    scores.trust, unmeasured = run_trust(run.benchmark, scores, run.transcripts, judgments, run.scenarios,
                                         judge_eval or run.spec.judge_eval, seed=run.spec.seed)
    scores.judge_warnings += unmeasured


def _synthetic_rejudge(run: LoadedRun, judge: SyntheticJudge, leakage_only: bool,
                       judge_eval: str | None = None) -> Path:
    """A planted run labelled by a synthetic judge: its construction labels, flipped at the judge's
    rates (``localbench.judging.synthetic``), scored like any judge's labels."""
    from localbench.scoring import aggregate, write_scores

    truth = run.benchmark.planted_judgments(run.transcripts)
    if not truth:
        raise UserError(f"{run.path}: judge '{judge.name}' answers with a planted run's truth, and this run has none "
                        "(make one with `localbench judges plant-run`)")
    out = RunPaths(run.path).judge_dir(judge.name)
    store = RunDir(out).judgments()
    seed = run.spec.seed
    made = 0
    for t in truth:
        if t.key in store:
            continue
        store.append(t.model_copy(update={"judge_model": judge.name, "label": judge.label(t.label or {}, seed, t.key)}))
        made += 1
    _write_info(out, {"judge": judge.name, "leakage_only": leakage_only, "identity": judge.identity,
                      "engine": {"engine": "synthetic"}, "seed": seed, "fpr": judge.fpr, "fnr": judge.fnr,
                      "calls": len(truth), "done": made, "skipped": len(truth) - made, "failed": 0, "too_long": 0})
    judgments = list(store.read())
    records = run.score(judge.name, judgments, leakage_only=True)
    scores = aggregate(records, run.benchmark.design, run.spec.resolved_run_id, judge.name, seed=seed)
    _trust(run, scores, judgments, judge_eval)
    scores.judge_warnings += _floor_warnings(run, judge.name, judge_eval)
    write_scores(out, records, scores)
    return out


def _keep_one_judge_model(out: Path, store: RecordStore[Judgment], info: dict[str, Any], identity: ModelIdentity) -> None:
    """Resuming a rejudge is refused when the judge's model or the rubrics changed since its
    judgments were made: their keys name neither, so old and new labels would mix unseen."""
    path = RunPaths(out).rejudge_info
    if not path.exists() or not store.keys():
        return
    old = json.loads(path.read_text())
    changes = []
    if old.get("identity") and (diff := identity_changes(old["identity"], identity)):
        changes.append(f"model: {diff}")
    if old.get("rubrics") and (edited := changed_files(old["rubrics"], info["rubrics"])):
        changes.append("rubrics: " + ", ".join(edited))
    if changes:
        raise UserError(f"{out}: judged before with another {'; '.join(changes)}; move that directory aside "
                        "to rejudge from scratch")


def _write_info(out: Path, info: dict[str, Any]) -> None:
    write_atomic(RunPaths(out).rejudge_info, json.dumps(info, indent=2, default=str))


def rejudge(run_dir: str | Path, judges: list[str], leakage_only: bool = True,
            judge_eval: str | None = None) -> list[Path]:
    """Each judge in turn, holding the run directory (``run_lock``): a rejudge writes into it."""
    with run_lock(run_dir):
        run = LoadedRun.read(run_dir)  # the spec parsed and the scenarios loaded once for every judge
        return [asyncio.run(rejudge_one(run_dir, j, leakage_only, judge_eval=judge_eval, run=run)) for j in judges]
