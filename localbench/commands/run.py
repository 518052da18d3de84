"""`localbench run` (simulate → judge → score → report), and the `judge` and `score` stages alone."""

from __future__ import annotations

from pathlib import Path

import typer

from localbench.commands import spec_flags as F

def register(app: typer.Typer) -> None:
    @app.command("run")
    @F.takes_condition_flags
    def run(spec_file: F.SpecFile = None, benchmark: F.Benchmark = None, scenarios: F.Scenarios = None,
            categories: F.Categories = None, conditions: F.Conditions = None, agent: F.Agent = None,
            judge: F.Judge = None, model: F.Model = None, engine: F.Engine = None, base_url: F.BaseUrl = None,
            limit: F.Limit = None, seeds: F.Seeds = None, seed: F.Seed = None, max_rounds: F.MaxRounds = None,
            max_tokens: F.MaxTokens = None, out: F.Out = None, run_id: F.RunId = None, no_cache: F.NoCache = False,
            concurrency: F.Concurrency = None, progress: F.ShowProgress = None,
            request_timeout: F.RequestTimeout = None, first_byte_timeout: F.FirstByteTimeout = None,
            judge_eval: F.JudgeEval = None, setting: F.Setting = None,
            named_conditions: dict[str, str] | None = None) -> None:
        """Run a benchmark end to end. With no arguments: the embedded default on CPU (about 5 minutes).

        Without --spec, flags change the benchmark's embedded default one field at a time; with
        --spec the file (on top of RunSpec's own defaults: every scenario, the benchmark's round
        limits) is the start.
        """
        given = {k: v for k, v in locals().items()
                 if k not in ("spec_file", "concurrency", "progress", "request_timeout", "first_byte_timeout")}
        from localbench.pipeline import Resolved, log, run_all
        from localbench.rejudge import LoadedRun
        from localbench.viewer.build import refresh_run_viewer

        spec = F.spec_from_flags(spec_file, **given, embedded=True, **{
            "serving.max_concurrency": concurrency, "serving.request_timeout_s": request_timeout,
            "serving.first_byte_timeout_s": first_byte_timeout})
        from localbench.runlog import run_lock

        res = Resolved(spec)  # parsed once above; the scenarios loaded once, for every stage and the viewer
        report = run_all(spec, progress, res)
        with run_lock(spec.run_dir):
            log(refresh_run_viewer(spec.run_dir, LoadedRun.of(res, spec.run_dir)))
        from localbench.report.render import lead_markdown, self_judging_lines

        lead = lead_markdown(spec.run_dir)
        if lead:
            typer.echo(lead)
        for line in self_judging_lines(spec.run_dir):
            typer.echo(f"warning: {line}")
        typer.echo(f"run directory: {spec.run_dir}")
        typer.echo(f"report: {report}")
        typer.echo(f"viewer: localbench view {spec.run_dir}")

    @app.command("judge")
    def judge(run_dir: Path = typer.Argument(..., help="a run directory (runs/<id>)"),
              judge_model: F.Judge = None, base_url: F.BaseUrl = None, engine: F.Engine = None) -> None:
        """Judge every finished simulation of a run (resumes; finished calls are skipped)."""
        from localbench.pipeline import judge_stage, spec_of

        spec = spec_of(run_dir)  # parsed once; the flags change it field by field
        if judge_model:
            spec = spec.with_model(spec.design.judge_role, judge_model)
        # a bad value is a one-line SpecError naming the field
        spec = spec.with_serving(judge_base_url=base_url or None, engine=engine or None)
        judge_stage(spec)

    @app.command("score")
    def score(run_dir: Path = typer.Argument(..., help="a run directory (runs/<id>)"),
              judge_eval: F.JudgeEval = None) -> None:
        """Compute scores.json and scenario_scores.jsonl from transcripts and judgments."""
        from localbench.pipeline import score_stage, spec_of
        from localbench.runlog import RunPaths

        spec = spec_of(run_dir)
        if judge_eval:
            spec = spec.model_copy(update={"judge_eval": judge_eval})
        scores = score_stage(spec)
        typer.echo(f"{len(scores.rows)} score rows → {RunPaths(run_dir).scores_path}")
