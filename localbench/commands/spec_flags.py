"""Command-line flags that set RunSpec fields, shared by `simulate`, `run` and `slurm submit`.

Each alias is an ``Annotated`` typer option; ``spec_from_flags`` turns the collected values into a
RunSpec on top of an optional YAML file (flags win, unset flags leave the file's value).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

SpecFile = Annotated[Optional[Path], typer.Option("--spec", help="RunSpec YAML; flags override its fields")]
Scenarios = Annotated[Optional[str], typer.Option("--scenarios", help="builtin | DIR | hf:NAME")]
Categories = Annotated[Optional[str], typer.Option("--categories", help="comma list, e.g. CD,MC (default all)")]
Levels = Annotated[Optional[str], typer.Option("--levels", help="privacy levels: L0,L1,L2 or implicit, enhanced, zdd")]
Agent = Annotated[Optional[str], typer.Option("--agent", help="model preset that plays the agents")]
UserSim = Annotated[Optional[str], typer.Option("--user-sim", help="model preset for simulated people")]
Judge = Annotated[Optional[str], typer.Option("--judge", help="model preset that judges (default: the agent's)")]
Engine = Annotated[Optional[str], typer.Option("--engine", help="auto | hf | vllm | openai")]
BaseUrl = Annotated[Optional[str], typer.Option("--base-url", help="openai engine: server URL (…/v1)")]
Limit = Annotated[Optional[int], typer.Option("--limit", help="scenarios per category")]
Seeds = Annotated[Optional[int], typer.Option("--seeds", help="simulations per scenario and level")]
Seed = Annotated[Optional[int], typer.Option("--seed", help="run seed every request seed derives from")]
MaxRounds = Annotated[Optional[int], typer.Option("--max-rounds", help="round limit for every category")]
MaxTokens = Annotated[Optional[int], typer.Option("--max-tokens", help="tokens per agent turn")]
Out = Annotated[Optional[str], typer.Option("--out", help="runs folder (default runs)")]
RunId = Annotated[Optional[str], typer.Option("--run-id", help="run directory name (default: from the spec)")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="do not read or write the response cache")]


def csv(value: Optional[str]) -> Optional[list[str]]:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


Concurrency = Annotated[Optional[int], typer.Option("--concurrency", help="simulations live at once")]
ShowProgress = Annotated[Optional[bool], typer.Option("--progress/--no-progress",
                                                      help="progress on stderr (default: when it is a terminal)")]


def spec_from_flags(spec_file: Optional[Path], *, scenarios=None, categories=None, levels=None, agent=None,
                    user_sim=None, judge=None, engine=None, base_url=None, limit=None, seeds=None, seed=None,
                    max_rounds=None, max_tokens=None, out=None, run_id=None, no_cache=False,
                    defaults: dict[str, Any] | None = None, **more: Any):
    """A RunSpec from an optional file plus flags; ``defaults`` apply only when neither sets a field.

    ``max_rounds`` (one number) becomes a limit for each category of the spec's benchmark.
    """
    from localbench.benchmarks import get_benchmark
    from localbench.spec import load_spec

    flags = dict(
        scenarios=scenarios, categories=csv(categories), levels=csv(levels), limit=limit, seeds=seeds, seed=seed,
        max_tokens=max_tokens, out=out, run_id=run_id, no_cache=True if no_cache else None,
        **{"models.agent": agent, "models.user_sim": user_sim, "models.judge": judge,
           "serving.engine": engine, "serving.base_url": base_url}, **more)
    if defaults and spec_file is None:
        for k, v in defaults.items():
            if flags.get(k) is None:
                flags[k] = v
    spec = load_spec(spec_file, **flags)
    if max_rounds is None:
        return spec
    flags["max_rounds"] = {c: max_rounds for c in get_benchmark(spec.benchmark).categories}
    return load_spec(spec_file, **flags)
