"""Command-line flags that set RunSpec fields, shared by `simulate` and `run`.

Each alias is an ``Annotated`` typer option; ``spec_from_flags`` turns the collected values into a
RunSpec on top of an optional YAML file (flags win, unset flags leave the file's value). What a
flag means for a benchmark (its levels, categories, roles) comes from the benchmark's design.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

SpecFile = Annotated[Optional[Path], typer.Option("--spec", help="RunSpec YAML; flags override its fields")]
Scenarios = Annotated[Optional[str], typer.Option("--scenarios", help="builtin | DIR | hf:NAME")]
Categories = Annotated[Optional[str], typer.Option("--categories", help="comma list of the benchmark's categories (default all)")]
Benchmark = Annotated[Optional[str], typer.Option("--benchmark", help="the benchmark to run (default asb)")]


def _levels_help() -> str:
    """--levels' help from the registered benchmarks' own declarations (embedded default levels,
    the condition axis's flag and what its values are), so it names no benchmark itself."""
    from localbench.design import design_of, registered

    defaults, aliases = [], []
    for name in registered():
        try:
            d = design_of(name)
        except Exception:  # noqa: BLE001 - a broken plug-in is reported where it is used, not in --help
            continue
        levels = d.embedded_default.get("levels")
        if levels:
            defaults.append(f"{name}: {','.join(levels)}")
        ax = d.condition
        if ax.flag:
            aliases.append(f"{d.title}'s levels are its {ax.label.lower()}s, also given as --{ax.flag}"
                           + (f": {ax.help}" if ax.help else ""))
    return ("comma list of the benchmark's levels: values of its condition axis, e.g. privacy levels. "
            f"Default: with --spec, the spec's; `run` without --spec, its embedded default's ({'; '.join(defaults)}); "
            "`simulate` without --spec, the benchmark's default levels. `localbench data design` lists every "
            "level and the defaults. " + " ".join(aliases))


Levels = Annotated[Optional[str], typer.Option("--levels", help=_levels_help())]
Agent = Annotated[Optional[str], typer.Option("--agent", help="model preset under test (the benchmark's first role)")]
Judge = Annotated[Optional[str], typer.Option("--judge", help="model preset that judges (default: the agent's), or a "
                                                             "judge that needs no model where the benchmark has one "
                                                             "(`localbench data design` lists them)")]
Model = Annotated[Optional[list[str]], typer.Option(
    "--model", help="ROLE=PRESET: the preset that plays one of the benchmark's roles (repeatable)")]
Engine = Annotated[Optional[str], typer.Option("--engine", help="auto | hf | vllm | openai")]
BaseUrl = Annotated[Optional[str], typer.Option("--base-url", help="openai engine: server URL (…/v1)")]
Limit = Annotated[Optional[int], typer.Option("--limit", help="scenarios per category")]
Seeds = Annotated[Optional[int], typer.Option("--seeds", help="simulations per scenario and level")]
Seed = Annotated[Optional[int], typer.Option("--seed", help="run seed every request seed derives from")]
MaxRounds = Annotated[Optional[int], typer.Option("--max-rounds", help="round limit for every category")]
MaxTokens = Annotated[Optional[int], typer.Option("--max-tokens", help="tokens per agent turn")]
Out = Annotated[Optional[str], typer.Option("--out", help="runs folder (default runs)")]
RunId = Annotated[Optional[str], typer.Option("--run-id", help="run directory name (default: from the spec)")]
JudgeEval = Annotated[Optional[str], typer.Option(
    "--judge-eval", help="a `localbench judges eval` directory that measured the judge: a judge not above the best "
                         "cheater there is listed in the run's judge warnings")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="do not read or write the response cache")]


def csv(value: Optional[str]) -> Optional[list[str]]:
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


RequestTimeout = Annotated[Optional[float], typer.Option(
    "--request-timeout", help="openai engine: seconds one request may take in all (default 600)")]
FirstByteTimeout = Annotated[Optional[float], typer.Option(
    "--first-byte-timeout", help="openai engine: seconds the server may send nothing before it is named as hung "
                                 "(default 30)")]
Concurrency = Annotated[Optional[int], typer.Option("--concurrency", help="simulations, requests and judge calls in flight at once (default: from the device, 64 on CPU)")]
ShowProgress = Annotated[Optional[bool], typer.Option("--progress/--no-progress",
                                                      help="progress on stderr (default: when it is a terminal)")]


def _roles(d, agent: Optional[str], judge: Optional[str], model: Optional[list[str]]) -> dict[str, Any]:
    """``models.<role>`` overrides of design ``d``: --agent is its first role, --judge its judge role."""
    from localbench.errors import UserError

    if not (agent or judge or model):
        return {}
    out: dict[str, Any] = {f"models.{d.primary_role}": agent}
    if judge is not None and judge in d.role(d.judge_role).rules:  # a rule judge, e.g. an exact matcher: no model
        out["extra.judge"] = judge
    else:
        out[f"models.{d.judge_role}"] = judge
    for item in model or []:
        role, sep, preset = item.partition("=")
        if not sep or not role.strip() or not preset.strip():
            raise UserError(f"--model {item!r}: expected ROLE=PRESET (roles of {d.title}: {', '.join(d.role_names)})")
        out[f"models.{role.strip()}"] = preset.strip()
    return out


def spec_from_flags(spec_file: Optional[Path], *, benchmark=None, scenarios=None, categories=None, levels=None,
                    agent=None, judge=None, model=None, engine=None, base_url=None, limit=None, seeds=None,
                    seed=None, max_rounds=None, max_tokens=None, out=None, run_id=None, no_cache=False,
                    embedded: bool = False, **more: Any):
    """A RunSpec from an optional file plus flags, the file read once and the whole parsed once.

    ``embedded``: without a file, the benchmark's embedded default (its design's) fills every field
    no flag sets. ``max_rounds`` (one number) becomes a limit for each category of the spec's
    benchmark.
    """
    from localbench.design import DEFAULT_BENCHMARK, UnknownBenchmark, design_of
    from localbench.spec import parse_spec, read_spec_file

    data = read_spec_file(spec_file) if spec_file is not None else {}
    where = str(spec_file) if spec_file is not None else "flags"
    flags = dict(
        benchmark=benchmark, scenarios=scenarios, categories=csv(categories), levels=csv(levels), limit=limit,
        seeds=seeds, seed=seed, max_tokens=max_tokens, out=out, run_id=run_id, no_cache=True if no_cache else None,
        **{"serving.engine": engine, "serving.base_url": base_url}, **more)
    try:  # the benchmark the spec will name, for what a flag means in it
        d = design_of(benchmark or data.get("benchmark") or DEFAULT_BENCHMARK)
    except (UnknownBenchmark, TypeError):
        return parse_spec(data, where, **flags)  # the one-line error naming the field
    flags.update(_roles(d, agent, judge, model))
    if embedded and spec_file is None:
        for k, v in d.embedded_default.items():
            if flags.get(k) is None:
                flags[k] = v
    if max_rounds is not None:
        flags["max_rounds"] = {c: max_rounds for c in d.categories}
    return parse_spec(data, where, **flags)


SPEC_COMMANDS = ("run", "simulate")
"""The commands that take the flags above (and so a benchmark's own name for --levels)."""


def expand_condition_flags(argv: list[str]) -> list[str]:
    """A benchmark's own name for ``--levels`` (its condition axis's ``flag``: ``--attackers``) as
    ``--levels``, so `localbench run --benchmark sopri --attackers text,single` reads naturally.

    Without ``--benchmark`` or ``--spec``, the flag also picks the benchmark that declares it. Only
    ``run`` and ``simulate`` take it; anything else is left for typer to judge.
    """
    from localbench.design import design_of, registered
    from localbench.errors import UserError

    if not argv or argv[0] not in SPEC_COMMANDS:
        return argv
    flags: dict[str, str] = {}
    for name in registered():
        try:
            flag = design_of(name).condition.flag
        except Exception:  # a broken plug-in is reported when it is used, not here
            continue
        if flag:
            flags.setdefault(f"--{flag}", name)
    out, used = [], None
    for arg in argv:
        opt, eq, value = arg.partition("=")
        if opt in flags:
            used = opt
            out.append(f"--levels{eq}{value}" if eq else "--levels")
        else:
            out.append(arg)
    if used is None:
        return argv
    chosen = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--benchmark"), None)
    chosen = chosen or next((a.partition("=")[2] for a in argv if a.startswith("--benchmark=")), None)
    if chosen is not None and chosen != flags[used]:
        raise UserError(f"{used} is benchmark '{flags[used]}''s name for --levels; benchmark '{chosen}' takes --levels")
    if chosen is None and not any(a == "--spec" or a.startswith("--spec=") for a in argv):
        out[1:1] = ["--benchmark", flags[used]]
    return out
