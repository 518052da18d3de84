"""`localbench simulate`: run the simulations of a benchmark and write runs/<id>/transcripts.jsonl.

Flags override the spec file field by field. Rerunning the same command resumes: finished
simulations are skipped and finished model calls come back from the run's response cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

ALL_CATEGORIES = ("CD", "MC", "CU", "GC", "HS", "CM", "AM")


def _csv(value: Optional[str]) -> Optional[list[str]]:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    def simulate(
        spec_file: Optional[Path] = typer.Option(None, "--spec", help="RunSpec YAML; flags override its fields"),
        benchmark: Optional[str] = typer.Option(None, "--benchmark", help="benchmark (asb)"),
        scenarios: Optional[str] = typer.Option(None, "--scenarios", help="builtin | DIR | hf:NAME"),
        categories: Optional[str] = typer.Option(None, "--categories", help="comma list, e.g. CD,MC (default all)"),
        levels: Optional[str] = typer.Option(None, "--levels",
                                             help="privacy levels: L0,L1,L2 or implicit, enhanced, zdd"),
        agent: Optional[str] = typer.Option(None, "--agent", help="model preset that plays the agents"),
        user_sim: Optional[str] = typer.Option(None, "--user-sim", help="model preset for simulated people"),
        engine: Optional[str] = typer.Option(None, "--engine", help="auto | hf | vllm | openai"),
        base_url: Optional[str] = typer.Option(None, "--base-url", help="openai engine: server URL (…/v1)"),
        limit: Optional[int] = typer.Option(None, "--limit", help="scenarios per category"),
        seeds: Optional[int] = typer.Option(None, "--seeds", help="simulations per scenario and level"),
        seed: Optional[int] = typer.Option(None, "--seed", help="run seed every request seed derives from"),
        max_rounds: Optional[int] = typer.Option(None, "--max-rounds",
                                                 help="round limit for every category (default per category)"),
        max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="tokens per turn"),
        concurrency: Optional[int] = typer.Option(None, "--concurrency", help="simulations live at once"),
        out: Optional[str] = typer.Option(None, "--out", help="runs folder (default runs)"),
        run_id: Optional[str] = typer.Option(None, "--run-id", help="run directory name (default from the spec)"),
        no_cache: bool = typer.Option(False, "--no-cache", help="do not read or write the response cache"),
        progress: Optional[bool] = typer.Option(None, "--progress/--no-progress",
                                                help="progress on stderr (default: when it is a terminal)"),
    ) -> None:
        """Simulate every (scenario × level × seed) and append each finished one to transcripts.jsonl."""
        from localbench.benchmarks.asb.simulate import simulate as run
        from localbench.spec import load_spec

        spec = load_spec(
            spec_file,
            benchmark=benchmark, scenarios=scenarios, categories=_csv(categories), levels=_csv(levels),
            limit=limit, seeds=seeds, seed=seed, max_tokens=max_tokens, out=out, run_id=run_id,
            no_cache=True if no_cache else None,
            max_rounds={c: max_rounds for c in ALL_CATEGORIES} if max_rounds is not None else None,
            **{"models.agent": agent, "models.user_sim": user_sim, "serving.engine": engine,
               "serving.base_url": base_url, "serving.max_concurrency": concurrency},
        )
        summary = run(spec, progress=progress)
        typer.echo(summary.line())
        typer.echo(f"transcripts: {summary.transcripts}")
        if summary.engine_errors:
            raise typer.Exit(1)
