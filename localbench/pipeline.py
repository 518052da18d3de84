"""The stages of a run: simulate → judge → score → report. Each is resumable on its own.

Phases: all simulation runs with the agent model first, then its engine is closed and every judge
call goes to the judge model in one batched pass, so agent and judge may be different models on
one GPU. When agent and judge are one model on one engine (the embedded default), `run` pipelines
the two: a simulation's judge calls enter the engine as soon as it ends (``JudgeAlong``), so the
engine is never idle in the simulations' tail; the judgments, the records and the stage summaries
are the same as staged. Each stage reads what the previous one wrote in the run directory and
skips what is done.
The benchmark is a plug-in looked up by the name the spec records (``localbench.benchmarks``).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from localbench.benchmarks import Benchmark
from localbench.errors import IncompleteRun, UserError, yaml_error
from localbench.registry import get_benchmark
from localbench.runlog import (RunDir, RunPaths, Transcript, changed_files, file_hashes, judge_of, resume_judge,
                               recorded_judge, run_lock)
from localbench.spec import NO_JUDGE, RunSpec, parse_spec

if TYPE_CHECKING:
    from localbench.runtime.plan import RunPlan


def log(msg: str) -> None:
    print(f"[localbench] {msg}", file=sys.stderr, flush=True)


def spec_of(run_dir: str | Path) -> RunSpec:
    """The RunSpec recorded in a run directory's spec.yaml (a mistyped path is not created)."""
    if not Path(run_dir).is_dir():
        raise UserError(f"{run_dir}: no such run directory")
    rd = RunDir(run_dir)
    try:
        doc = rd.read_spec()
    except FileNotFoundError as e:
        raise UserError(str(e)) from e
    except yaml.YAMLError as e:
        raise UserError(f"{rd.spec_file}: not valid YAML: {yaml_error(e)}") from e
    if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
        raise UserError(f"{rd.spec_file}: not a run record (it has no 'spec' section); a study file is run "
                        "with `localbench run --spec FILE`")
    spec = parse_spec(doc["spec"], str(rd.spec_file), prefix="spec.", recorded=True)
    return spec.model_copy(update={"out": str(Path(run_dir).parent), "run_id": Path(run_dir).name})


def benchmark_of(spec: RunSpec) -> Benchmark:
    return get_benchmark(spec.benchmark)


@dataclass
class Resolved:
    """What a command resolves once and hands down to its stages: the spec's benchmark, its
    simulator, the scenarios that simulator loads (on first use, so a stage's checks still come
    before a load's errors) and the run plan (``runtime.plan``: each role's preset, engine, URL and
    memory share, built once by ``plan_stages``)."""

    spec: RunSpec
    engines: dict[tuple[str, str], Any] = field(default_factory=dict)  # (role, preset) -> RoleServing, once checked
    plan: RunPlan | None = None  # once planned (``plan_stages``)
    bm: Benchmark = field(init=False)
    simulator: Any = field(init=False)
    _loaded: tuple[list[Any], int] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.bm = benchmark_of(self.spec)
        self.simulator = self.bm.simulator()

    def load(self, spec: RunSpec | None = None) -> tuple[list[Any], int]:
        """The scenarios and the number of load warnings (``Simulator.load``'s), loaded once;
        ``spec``: the stage's (it may differ in its models, never in what is loaded)."""
        if self._loaded is None:
            self._loaded = self.simulator.load(self.spec)
        return self._loaded

    @property
    def scenarios(self) -> dict[str, Any]:
        """The scenarios by id (what judging and scoring look them up by)."""
        return {s.id: s for s in self.load()[0]}


def scenarios_for(spec: RunSpec) -> dict[str, Any]:
    """The run's scenarios, by id, as its benchmark loads them."""
    return Resolved(spec).scenarios


def read_transcripts(rd: RunDir) -> list[Transcript]:
    return list(rd.transcripts().read())


# -- stages -----------------------------------------------------------------------------------

def simulate_stage(spec: RunSpec, progress: bool | None = None, along: "JudgeAlong | None" = None,
                   res: Resolved | None = None) -> Path:
    """Simulate; stop the run (UserError) if the engine failed, so later stages never judge and
    score a partial set as if it were the whole run. ``along``: judge each simulation as it ends."""
    from localbench.runtime.harness import simulate

    res = res or Resolved(spec)
    summary = simulate(spec, res.simulator, progress=progress, along=along, scripted=res.bm.scripted_backend,
                       load=res.load, engines=res.engines, plan=res.plan,
                       preflight=(lambda scenarios: preflight_outputs(spec, res.bm, scenarios, pipelined=along is not None))
                       if spec.serving.preflight else None)
    if res.plan is not None:
        record_plan(res.plan, summary.run_dir)
    log(summary.line())  # how many ran now and how many a resumed run found already done
    if along is not None and along.summary_line:
        log(along.summary_line)
    if summary.engine_errors:
        from localbench.errors import StorageError

        kind = StorageError if (summary.first_engine_error or "").startswith("CacheStorageError") else IncompleteRun
        raise kind(
            f"{summary.engine_errors} of {summary.total} simulations stopped by engine errors, the first: "
            f"{summary.first_engine_error}. Finished simulations are kept in {summary.run_dir}; fix the engine "
            f"and rerun the same command to run the rest (details: {RunPaths(summary.run_dir).sim_errors_path})")
    if summary.all_failed:  # nothing to judge or score: say so now, not with a report of failures
        raise IncompleteRun(summary.all_failed_line())
    return summary.run_dir


def preflight_outputs(spec: RunSpec, bm: Benchmark, scenarios: list[Any], pipelined: bool = False) -> dict[str, list]:
    """role -> the schemas each engine answers once before the first simulation (``runtime.preflight``):
    the benchmark's, the judge's on the agent's engine where judging is pipelined into the
    simulations, and none for the judge where the run has none."""
    outputs = {role: list(specs) for role, specs in bm.preflight_outputs(spec, scenarios).items()}
    judge = outputs.pop(spec.design.judge_role, [])
    if pipelined and spec.judged:
        outputs.setdefault(spec.design.primary_role, []).extend(judge)
    return outputs


def judge_concurrency(spec: RunSpec, client=None) -> int:
    """Judge calls in flight: the spec's max_concurrency, else from the judge's server where it is
    one (its ``max_num_seqs``), else from the device here (``serving.session``)."""
    from localbench.serving.session import concurrency, served_limits

    return concurrency(spec.serving, served=served_limits([client.backend] if client is not None else [])).judge


MAX_JUDGE_PASSES = 4
"""Passes of the judge stage: a judge whose tasks depend on another's labels runs in a later pass."""


async def judge_transcripts(spec: RunSpec, transcripts: list[Transcript], scenarios: dict[str, Any],
                            client, store, leakage_only: bool = False, show_progress: bool | None = None):
    """Every judge call of these transcripts not yet in ``store``, in one batched pass; returns the summary.

    ``leakage_only`` keeps the benchmark's leakage judges alone (what `judges rejudge` asks by default).
    Some judges read others' labels (a grade asked only after another call matched an answer to
    what it is graded against), so the benchmark is asked for its tasks again after each pass, until a pass has
    nothing new to run (at most ``MAX_JUDGE_PASSES``).
    """
    from localbench.judging.runner import JudgeRunSummary, run_judge_tasks

    bm = benchmark_of(spec)
    total = JudgeRunSummary()
    for n in range(MAX_JUDGE_PASSES):
        tasks = bm.judge_tasks(spec, transcripts, scenarios, client, store)
        if leakage_only:
            tasks = [t for t in tasks if t.meta["judge"] in bm.leakage_judges]
        summary = await run_judge_tasks(client, tasks, store, max_concurrency=judge_concurrency(spec, client),
                                        show_progress=show_progress)
        total.done += summary.done
        total.failed += summary.failed
        total.too_long += summary.too_long
        if n == 0:
            total.total, total.skipped = summary.total, summary.skipped
        else:
            total.total += summary.done
        if not summary.done:
            break
    return total


def _judge_rubrics(spec: RunSpec) -> dict[str, str]:
    from localbench.judging.rubrics import judges_dir

    return file_hashes(benchmark_of(spec).rubric_files(), judges_dir())


def record_plan(plan, run_dir: str | Path) -> None:
    """plan.json beside spec.yaml, and its hash in spec.yaml's ``plan`` section (written once the
    simulate stage has checked the directory holds this run, never over another run's plan)."""
    import hashlib

    path = plan.write(run_dir)
    RunDir(run_dir).update_provenance("plan", {"file": path.name, "judge_phase": plan.judge_phase,
                                               "sha256": hashlib.sha256(path.read_bytes()).hexdigest()})


def _record_judge(spec: RunSpec, rd: RunDir, client, rubrics: dict[str, str], model: str | None = None) -> None:
    from localbench.judging.runner import JUDGE_TEMPERATURE

    rd.update_provenance("judge", {
        "model": model or spec.judge_model, "identity": client.backend.identity.__dict__,
        "engine": client.backend.describe(), "rubrics": rubrics,
        "max_tokens": spec.judge_max_tokens, "temperature": JUDGE_TEMPERATURE,
        "concurrency": judge_concurrency(spec, client),
    })


def _judged_line(summary, seconds: float) -> str:
    return (f"judging done: {summary.done} calls made, {summary.skipped} already done, {summary.failed} failed "
            f"({seconds:.1f} s)")


async def _judge(spec: RunSpec, rd: RunDir, progress: bool | None, res: Resolved, backend=None) -> None:
    """The judge stage's work; ``backend``: a judge engine already open (a study judges every model's
    run with one), wrapped in a client with this run's cache and left open; else one opened here."""
    from localbench.runtime.clients import client_for, run_cache
    from localbench.serving.client import StructuredClient

    t0 = time.monotonic()
    transcripts = read_transcripts(rd)
    if not transcripts:
        raise UserError(f"{rd.path}: no transcripts to judge (run `localbench simulate` first)")
    scenarios = res.scenarios
    rubrics = _judge_rubrics(spec)
    judge = spec.design.judge_role
    plan = res.plan if res.plan is not None and judge in res.plan.served else None
    _keep_one_judge(spec, rd, rubrics, plan)
    client = (StructuredClient(backend, cache=run_cache(spec, rd.path), max_retries=spec.serving.max_retries)
              if backend is not None else client_for(spec, judge, rd.path, engines=res.engines, plan=plan))
    try:
        if spec.serving.preflight:  # the judge's engine takes each of its schemas, before the first call
            from localbench.runtime.preflight import check_engines

            await check_engines([(client, judge, res.bm.preflight_outputs(spec, list(scenarios.values())).get(judge, []))])
        model = plan.judge_model if plan is not None else spec.judge_model
        _record_judge(spec, rd, client, rubrics, model)
        log(f"judging {len(transcripts)} simulations with {model}")
        _say_self_judging(spec, res)
        summary = await judge_transcripts(spec, transcripts, scenarios, client, rd.judgments(), show_progress=progress)
        log(_judged_line(summary, time.monotonic() - t0))
    finally:
        if backend is None:
            await client.aclose()
        elif client.cache is not None:
            client.cache.close()


class JudgeAlong:
    """The judge stage pipelined into the simulate stage (``runtime.harness.Along``), for a run whose
    agent and judge are one model on one engine: each simulation's judge calls go to the agent's
    client as soon as the simulation is recorded, so they batch with the simulations still running
    instead of waiting for the slowest one. After the last simulation, one pass over every
    transcript (as the judge stage makes) does what is left: a resumed run's earlier simulations,
    judges that read other judges' labels. Judgments are keyed and skipped when present, and
    judging is at temperature 0, so they are the ones the staged judge stage makes."""

    def __init__(self, spec: RunSpec, progress: bool | None = None, res: Resolved | None = None):
        self.spec = spec
        self.res = res or Resolved(spec)
        self.rd = RunDir(spec.run_dir)
        self.progress = progress
        self.summary_line = ""
        self._pending: list[asyncio.Future] = []
        self._client = None
        self._t0 = 0.0
        self.busy_s = 0.0  # judge work in flight beside the simulations (for bench/)

    def start(self, clients) -> None:
        from localbench.judging.runner import JudgeRunSummary

        self._t0 = time.monotonic()
        self._client = clients.for_role(self.spec.design.primary_role)
        self._scenarios = self.res.scenarios
        self._rubrics = _judge_rubrics(self.spec)
        plan = self.res.plan
        _keep_one_judge(self.spec, self.rd, self._rubrics, plan)
        model = plan.judge_model if plan is not None else self.spec.judge_model
        _record_judge(self.spec, self.rd, self._client, self._rubrics, model)
        self._store = self.rd.judgments()
        self._total = JudgeRunSummary()
        log(f"judging each simulation as it ends, with {model} (the agent's engine)")
        _say_self_judging(self.spec, self.res)

    def add(self, transcript: Transcript) -> None:
        if transcript.termination == "error":
            return  # judged (as the judge stage does) in the final pass, unless every simulation failed

        async def judge_one() -> None:
            s = await judge_transcripts(self.spec, [transcript], self._scenarios, self._client, self._store,
                                        show_progress=False)
            self._total.done += s.done
            self._total.failed += s.failed

        self._pending.append(asyncio.ensure_future(judge_one()))

    async def finish(self) -> None:
        try:
            await asyncio.gather(*self._pending)
        finally:
            for f in self._pending:
                f.cancel()
        transcripts = read_transcripts(self.rd)
        if all(t.termination == "error" for t in transcripts):
            return  # nothing to judge: simulate_stage stops the run (as it does before a staged judge stage)
        rest = await judge_transcripts(self.spec, transcripts, self._scenarios, self._client, self._store,
                                       show_progress=self.progress)
        rest.done += self._total.done
        rest.failed += self._total.failed
        rest.skipped = max(0, rest.skipped - self._total.done)  # the final pass skipped what was judged along the way
        self.summary_line = _judged_line(rest, time.monotonic() - self._t0)


def _say_self_judging(spec: RunSpec, res: Resolved) -> None:
    """The judge stage's one line when the judge is the agent's own model (``judging.sanity``)."""
    from localbench.judging.sanity import self_judging_message

    plan = res.plan
    if line := self_judging_message(spec, plan.judge_model if plan is not None else None, res.bm.scripted_backend,
                                    plan.model_for(spec.design.primary_role) if plan is not None else None):
        log(f"warning: {line}")


def shares_engine(spec: RunSpec, models: dict[str, str] | None = None) -> bool:
    """Whether the judge is the agent's model on the agent's engine (so ``run`` may pipeline them);
    ``models``: each role's preset, where already looked up (``plan_stages``)."""
    agent, judge = spec.design.primary_role, spec.design.judge_role
    model = models.__getitem__ if models is not None else spec.model_for
    return model(agent) == model(judge) and spec.url_for(agent) == spec.url_for(judge)


def _keep_one_judge(spec: RunSpec, rd: RunDir, rubrics: dict[str, str], plan=None) -> None:
    """A run's judgments come from one judge model and one set of rubrics.

    Judgment keys name neither, so judging a half-judged run with another model or edited
    rubrics would mix two kinds of labels under one name: refused. Models are compared by
    preset name (what judgments record), so a judge given as a preset file's path matches.
    """
    from localbench.serving.presets import load_preset

    entry = plan.served.get(spec.design.judge_role) if plan is not None else None
    judge = entry.preset.name if entry is not None and entry.preset is not None else load_preset(spec.judge_model).name
    models = {j.judge_model for j in rd.judgments().read()} - {"", "rule"}
    earlier = sorted(models - {judge})
    if earlier:
        raise UserError(f"{rd.path}: already judged by {', '.join(earlier)}, not {judge}; to compare judges, use "
                        f"`localbench judges rejudge {rd.path} --judges {judge}` (written beside the run's own)")
    before = (rd.read_spec().get("judge") or {}).get("rubrics") or {}
    changed = changed_files(before, rubrics)
    if models and before and changed:
        raise UserError(f"{rd.path}: judged with other rubrics than these ({', '.join(changed)} changed); "
                        f"move {rd.judgments_path} aside to judge the whole run again with these")


def judge_stage(spec: RunSpec, progress: bool | None = None, res: Resolved | None = None) -> None:
    """Judge a run; with no judge in the spec, the one an earlier judge stage recorded goes on
    (`localbench judge RUN --judge X`, then `localbench run` or `localbench judge RUN`, resumes X)."""
    rd = RunDir(spec.run_dir)
    spec = resume_judge(spec, rd)
    if not (res.plan.judged if res is not None and res.plan is not None else spec.judged):
        check_judging(spec)
        log(f"judging off (--judge {NO_JUDGE}): no judge call; scores from the rule-based part alone")
        return
    res = res or Resolved(spec)
    if res.plan is None or spec.design.judge_role not in res.plan.served:  # the judge stage alone: its role planned
        plan_stages(spec, res, roles=[spec.design.judge_role], staged=True)
    with run_lock(rd.path):
        asyncio.run(_judge(spec, rd, progress, res))


async def judge_with(spec: RunSpec, backend, progress: bool | None = None, res: Resolved | None = None) -> None:
    """Judge a run with a judge engine already open and left open: a study loads each benchmark's
    judge once and judges every model's run with it (``localbench.study.run``). Call it from the
    event loop the engine was opened on."""
    rd = RunDir(spec.run_dir)
    spec = resume_judge(spec, rd)
    with run_lock(rd.path):
        await _judge(spec, rd, progress, res or Resolved(spec), backend)


def score_stage(spec: RunSpec, res: Resolved | None = None):
    with run_lock(spec.run_dir):
        return _score(spec, res or Resolved(spec))


def _score(spec: RunSpec, res: Resolved):
    from localbench.scoring import aggregate, write_scores

    t0 = time.monotonic()
    bm = res.bm
    rd = RunDir(spec.run_dir)
    transcripts = read_transcripts(rd)
    judgments = list(rd.judgments().read())
    judge = judge_of(spec, rd)
    records = bm.scenario_scores(transcripts, judgments, res.scenarios, judge)
    scores = aggregate(records, bm.design, spec.resolved_run_id, judge, seed=spec.seed)
    scores.failures = dict(Counter(j.judge for j in judgments if j.failure))
    from localbench.judging.sanity import check_judgments, self_judging_warning

    scores.judge_warnings = check_judgments(judgments, bm.judge_checks(), judge)  # warnings, never exclusions
    agent = res.plan.model_for(spec.design.primary_role) if res.plan is not None else None
    if own := self_judging_warning(spec, judgments, bm.judge_checks(), judge, bm.scripted_backend, agent):
        scores.judge_warnings.append(own)
    if judge != NO_JUDGE:  # each judge behind a metric measured or not, headline metrics corrected
        from localbench.judging.trust import eval_dirs, run_trust

        scores.trust, unmeasured = run_trust(bm, scores, transcripts, judgments, res.scenarios, spec.judge_eval,
                                             seed=spec.seed)
        scores.judge_warnings += unmeasured
        for ev in eval_dirs(spec.judge_eval):  # the evals that measured this judge: below the cheater floor warns
            from localbench.judging.reliability import floor_judge_warnings

            scores.judge_warnings += floor_judge_warnings(str(ev), judge)
    if judge == NO_JUDGE:
        scores.notes.append(f"No judge (--judge {NO_JUDGE}): the judge stage was off; the scores are the "
                            f"benchmark's rule-based part alone, and what only a judge decides is not judged")
    unscored = Counter((r.unscored, r.judge_stage_finishes) for r in records if r.unscored)
    for (why, judging), n in sorted(unscored.items()):
        hint = f" (`localbench judge {rd.path}` finishes it)" if judging else ""
        scores.notes.append(f"{n} simulations have no leakage score: {why}{hint}; "
                            "they count as failed, never as no leak")
    n_ctx = sum(1 for t in transcripts if t.termination == "context_exhausted")
    if n_ctx:
        scores.notes.append(f"{n_ctx} simulations ended early: context_exhausted")
    planned, missing = missing_simulations(spec, {t.key for t in transcripts}, res)
    if missing:
        scores.planned_simulations, scores.missing_simulations = planned, missing
        scores.notes.insert(0, missing_note(planned, missing, rd.path))
        log(f"warning: {missing_note(planned, missing, rd.path)}")
    write_scores(rd.path, records, scores)
    log(f"scores: {len(scores.rows)} rows → {rd.scores_path} ({time.monotonic() - t0:.1f} s)")
    return scores


def missing_simulations(spec: RunSpec, have: set[str], res: Resolved | None = None) -> tuple[int, dict[str, int]]:
    """How many simulations the spec lists (this shard's, for a shard) and, per category, how many
    of them have no transcript."""
    res = res or Resolved(spec)
    units = res.simulator.plan(spec, res.load()[0])
    mine = set(spec.select_shard([u.key for u in units]))
    missing = Counter(u.category for u in units if u.key in mine and u.key not in have)
    return len(mine), dict(sorted(missing.items()))


def missing_note(planned: int, missing: dict[str, int], run: Path) -> str:
    n = sum(missing.values())
    per = ", ".join(f"{c} {k}" for c, k in missing.items())
    return (f"{n} of the {planned} simulations the spec lists have no transcript in {RunPaths(run).transcripts_path} "
            f"({per}): the scores cover the rest only; rerun the command that made the run to simulate them "
            "(finished ones are skipped)")


def report_stage(spec: RunSpec) -> Path:
    from localbench.report import render_report

    t0 = time.monotonic()
    with run_lock(spec.run_dir):
        path = render_report(spec.run_dir)
    log(f"report: {path} ({time.monotonic() - t0:.1f} s)")
    return path


def pipelined(spec: RunSpec, models: dict[str, str] | None = None) -> bool:
    """``run`` judges along the simulations when the judge shares the agent's engine, unless
    ``LOCALBENCH_STAGED_JUDGING=1`` (bench/ compares the two)."""
    import os

    return shares_engine(spec, models) and os.environ.get("LOCALBENCH_STAGED_JUDGING", "") not in ("1", "true")


def check_judging(spec: RunSpec, judge: str | None = None) -> None:
    """Refuse a judge the run cannot have: no judge (`--judge none`) for a benchmark whose scores
    need one, or a scripted agent (no model) as the judge; ``judge``: its preset, where already
    looked up."""
    bm = benchmark_of(spec)
    judge = judge or spec.judge_model
    if judge == NO_JUDGE and not bm.judge_optional:
        raise UserError(f"field 'models.{spec.design.judge_role}': {spec.design.title} cannot score without a judge "
                        f"(--judge {NO_JUDGE} is for benchmarks with rule-based scores); give a judge preset")
    if judge != NO_JUDGE and bm.scripted_backend(judge) is not None:
        raise UserError(f"field 'models.{spec.design.judge_role}': '{judge}' is a scripted agent, not a model, and "
                        f"cannot judge; give --judge PRESET, or --judge {NO_JUDGE} for no judge")


def model_roles(spec: RunSpec, models: dict[str, str] | None = None) -> list[str]:
    """The roles played by a model: not a scripted agent's, nor the judge's with no judge;
    ``models``: each role's preset, where already looked up."""
    bm = benchmark_of(spec)
    models = models if models is not None else {r: spec.model_for(r) for r in spec.design.role_names}
    judge = spec.design.judge_role
    return [r for r in spec.design.role_names
            if not (r == judge and models[judge] == NO_JUDGE) and bm.scripted_backend(models[r]) is None]


def plan_stages(spec: RunSpec, res: Resolved, roles: list[str] | None = None, staged: bool = False,
                recorded: str | None = None, check_judge: bool = True):
    """The run plan (``runtime.plan``), built once for every stage and kept in ``res``: each role's
    preset looked up once, the judge checked, and every role played by a model (``roles``: those of
    these alone) checked to run here and given its engine, URL and memory share. ``staged``: the judge
    never pipelined into the agent's engine; ``recorded``: the judge a run's judge stage recorded,
    which goes on (staged) where the spec names none (``runlog.resume_judge``'s rule); ``check_judge``:
    refuse a judge the run cannot have now (``check_judging``; not for `localbench simulate`)."""
    from localbench.runtime.plan import plan_run, role_presets

    models = role_presets(spec)
    judge_role = spec.design.judge_role
    if recorded and recorded != models[judge_role]:
        staged = True
        if spec.models.get(judge_role) is None:
            models[judge_role] = recorded
    if check_judge:
        check_judging(spec, models[judge_role])
    along = not staged and models[spec.design.judge_role] != NO_JUDGE and pipelined(spec, models)
    names = [r for r in model_roles(spec, models) if roles is None or r in roles]
    res.plan = plan_run(spec, names, pipelined=along,
                        models=models)
    return res.plan


def run_all(spec: RunSpec, progress: bool | None = None, res: Resolved | None = None) -> Path:
    """simulate → judge → score → report; returns the report path. Every model is checked first,
    so a judge that cannot run here fails now, not after the simulations. ``res``: the command's."""
    from localbench.runtime.plan import PIPELINED

    res = res or Resolved(spec)  # the scenarios loaded, and each role's engine chosen, once for every stage
    # a judge chosen earlier with `localbench judge RUN --judge X` goes on (staged), unless the spec names one
    plan = plan_stages(spec, res, recorded=recorded_judge(RunDir(spec.run_dir).read_spec())
                       if RunPaths(spec.run_dir).spec_file.exists() else None)
    with run_lock(spec.run_dir):  # held across the stages (each also asks for it when run alone)
        if plan.judge_phase == PIPELINED:
            simulate_stage(spec, progress, along=JudgeAlong(spec, progress, res), res=res)
        else:
            simulate_stage(spec, progress, res=res)
            judge_stage(spec, progress, res)
        score_stage(spec, res)
        return report_stage(spec)
