"""`localbench simulate`: run the simulations of a benchmark and write runs/<id>/transcripts.jsonl.

Flags override the spec file field by field. Rerunning the same command resumes: finished
simulations are skipped and finished model calls come back from the run's response cache.
"""

from __future__ import annotations

import typer

from localbench.commands import spec_flags as F

def register(app: typer.Typer) -> None:
    @app.command("simulate")
    @F.takes_condition_flags
    def simulate(spec_file: F.SpecFile = None, benchmark: F.Benchmark = None, scenarios: F.Scenarios = None,
                 categories: F.Categories = None, conditions: F.Conditions = None, agent: F.Agent = None,
                 model: F.Model = None, engine: F.Engine = None, base_url: F.BaseUrl = None,
                 limit: F.Limit = None, seeds: F.Seeds = None, seed: F.Seed = None, max_rounds: F.MaxRounds = None,
                 max_tokens: F.MaxTokens = None, concurrency: F.Concurrency = None, out: F.Out = None,
                 run_id: F.RunId = None, no_cache: F.NoCache = False, progress: F.ShowProgress = None,
                 request_timeout: F.RequestTimeout = None, first_byte_timeout: F.FirstByteTimeout = None,
                 setting: F.Setting = None, named_conditions: dict[str, str] | None = None) -> None:
        """Simulate every (scenario × condition × seed) and append each finished one to transcripts.jsonl."""
        from localbench.pipeline import Resolved, plan_stages
        from localbench.runtime.harness import simulate as run_simulations

        spec = F.spec_from_flags(
            spec_file, scenarios=scenarios, categories=categories, conditions=conditions, agent=agent, model=model,
            engine=engine, base_url=base_url, limit=limit, seeds=seeds, seed=seed, max_rounds=max_rounds,
            max_tokens=max_tokens, out=out, run_id=run_id, no_cache=no_cache, benchmark=benchmark,
            setting=setting, named_conditions=named_conditions,
            **{"serving.max_concurrency": concurrency, "serving.request_timeout_s": request_timeout,
               "serving.first_byte_timeout_s": first_byte_timeout})
        res = Resolved(spec)  # the scenarios loaded once; the simulation roles planned once (plan.json)
        plan = plan_stages(spec, res, roles=spec.design.simulation_roles, staged=True, check_judge=False)
        summary = run_simulations(spec, res.simulator, progress=progress, scripted=res.bm.scripted_backend,
                                  load=res.load, plan=plan)
        if summary.transcripts.exists():
            from localbench.pipeline import record_plan

            record_plan(plan, summary.run_dir)
        typer.echo(summary.line())
        if summary.transcripts.exists():  # none yet when the engine failed before any simulation ended
            typer.echo(f"transcripts: {summary.transcripts}")
        if summary.all_failed:  # exit 1 with the count and the first error, never 0
            from localbench.errors import IncompleteRun

            raise IncompleteRun(summary.all_failed_line())
        if summary.engine_errors:  # 1: incomplete (rerun resumes); 3: a file could not be written
            from localbench.errors import EXIT_CANNOT_WRITE, EXIT_INCOMPLETE

            storage = (summary.first_engine_error or "").startswith("CacheStorageError")
            raise typer.Exit(EXIT_CANNOT_WRITE if storage else EXIT_INCOMPLETE)
