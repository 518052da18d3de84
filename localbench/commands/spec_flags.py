"""Command-line flags that set RunSpec fields, shared by `simulate` and `run`.

Each alias is an ``Annotated`` typer option; ``spec_from_flags`` turns the collected values into a
RunSpec on top of an optional YAML file (flags win, unset flags leave the file's value). What a
flag means for a benchmark (its conditions, categories, roles) comes from the benchmark's design.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from localbench.registry import DEFAULT_BENCHMARK

SpecFile = Annotated[Optional[Path], typer.Option("--spec", help="RunSpec YAML; flags override its fields")]
Scenarios = Annotated[Optional[str], typer.Option("--scenarios", help="builtin | DIR | hf:NAME")]
Categories = Annotated[Optional[str], typer.Option("--categories", help="comma list of the benchmark's categories (default all)")]
Benchmark = Annotated[Optional[str], typer.Option("--benchmark", help=f"the benchmark to run (default {DEFAULT_BENCHMARK})")]


def _conditions_help() -> str:
    """--conditions' help from the registered benchmarks' own declarations (embedded default
    conditions, the condition axis's flag and what its values are), so it names no benchmark itself."""
    from localbench.registry import design_of, registered

    defaults, aliases = [], []
    for name in registered():
        try:
            d = design_of(name)
        except Exception:  # noqa: BLE001 - a broken plug-in is reported where it is used, not in --help
            continue
        conditions = d.embedded_default.get("conditions")
        if conditions:
            defaults.append(f"{name}: {','.join(conditions)}")
        ax = d.condition
        if ax.flag:
            aliases.append(f"{d.title}'s conditions are its {ax.label.lower()}s, also given as --{ax.flag}"
                           + (f": {ax.help}" if ax.help else ""))
    return ("comma list of the benchmark's conditions: values of its condition axis (privacy levels, "
            "settings, attackers); --levels is its earlier name. "
            f"Default: with --spec, the spec's; `run` without --spec, its embedded default's ({'; '.join(defaults)}); "
            "`simulate` without --spec, the benchmark's default conditions. `localbench data design` lists every "
            "condition and the defaults. " + " ".join(aliases))


Conditions = Annotated[Optional[str], typer.Option("--conditions", "--levels", help=_conditions_help())]
Agent = Annotated[Optional[str], typer.Option("--agent", help="model preset under test (the benchmark's first role)")]
Judge = Annotated[Optional[str], typer.Option("--judge", help="model preset that judges (default: the agent's), or a "
                                                             "judge that needs no model where the benchmark has one "
                                                             "(`localbench data design` lists them)")]
Model = Annotated[Optional[list[str]], typer.Option(
    "--model", help="ROLE=PRESET: the preset that plays one of the benchmark's roles (repeatable)")]
Engine = Annotated[Optional[str], typer.Option("--engine", help="auto | hf | vllm | openai")]
BaseUrl = Annotated[Optional[str], typer.Option("--base-url", help="openai engine: server URL (…/v1)")]
Limit = Annotated[Optional[int], typer.Option("--limit", help="scenarios per category")]
Seeds = Annotated[Optional[int], typer.Option("--seeds", help="simulations per scenario and condition")]
Seed = Annotated[Optional[int], typer.Option("--seed", help="run seed every request seed derives from")]
MaxRounds = Annotated[Optional[int], typer.Option("--max-rounds", help="round limit for every category")]
MaxTokens = Annotated[Optional[int], typer.Option("--max-tokens", help="tokens per agent turn")]
Out = Annotated[Optional[str], typer.Option("--out", help="runs folder (default runs)")]
RunId = Annotated[Optional[str], typer.Option("--run-id", help="run directory name (default: from the spec)")]
JudgeEval = Annotated[Optional[str], typer.Option(
    "--judge-eval", help="a `localbench judges eval` directory, or a folder of them, that measured the run's judges: "
                         "the report's 'How far to trust these numbers' shows each judge's error rates and the "
                         "corrected headline metrics; a judge none measured, or one not above the best cheater, is "
                         "listed in the run's judge warnings")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="do not read or write the response cache")]


def _settings_help() -> str:
    """--setting's help from the registered benchmarks' declared settings (their designs'), so that
    it names every setting a flag can reach and no benchmark itself."""
    from localbench.registry import design_of, registered

    declared = []
    for name in registered():
        try:
            fields = design_of(name).settings.model_fields
        except Exception:  # noqa: BLE001 - a broken plug-in is reported where it is used, not in --help
            continue
        if fields:
            declared.append(f"{name}: {', '.join(fields)}")
    return ("NAME=VALUE: one of the benchmark's own settings (a spec's extra: section), VALUE read as YAML; "
            f"repeatable. Settings: {'; '.join(declared)} (`localbench data design` says what each is)")


Setting = Annotated[Optional[list[str]], typer.Option("--setting", help=_settings_help())]


def settings_flags(items: Optional[list[str]]) -> dict[str, Any]:
    """``extra.<name>`` overrides from --setting NAME=VALUE items, each VALUE read as YAML (so a number
    is a number); the spec's validation then checks the name and the value against the benchmark's."""
    import yaml

    from localbench.errors import UserError

    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UserError(f"--setting {item!r}: expected NAME=VALUE (`localbench data design` lists the settings)")
        try:
            out[f"extra.{name.strip()}"] = yaml.safe_load(value)
        except yaml.YAMLError as e:
            raise UserError(f"--setting {item!r}: the value is not valid YAML ({e})") from e
    return out


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


def spec_from_flags(spec_file: Optional[Path], *, benchmark=None, scenarios=None, categories=None, conditions=None,
                    agent=None, judge=None, model=None, engine=None, base_url=None, limit=None, seeds=None,
                    seed=None, max_rounds=None, max_tokens=None, out=None, run_id=None, no_cache=False,
                    setting: Optional[list[str]] = None, embedded: bool = False,
                    named_conditions: Optional[dict[str, str]] = None, **more: Any):
    """A RunSpec from an optional file plus flags, the file read once and the whole parsed once.

    ``embedded``: without a file, the benchmark's embedded default (its design's) fills every field
    no flag sets. ``max_rounds`` (one number) becomes a limit for each category of the spec's
    benchmark. ``named_conditions``: --conditions under a benchmark's own name (``takes_condition_flags``).
    """
    from localbench.registry import UnknownBenchmark, design_of
    from localbench.spec import parse_spec, read_spec_file

    benchmark, named = _condition(named_conditions or {}, benchmark, spec_file)
    conditions = named or conditions

    data = read_spec_file(spec_file) if spec_file is not None else {}
    where = str(spec_file) if spec_file is not None else "flags"
    flags = dict(
        benchmark=benchmark, scenarios=scenarios, categories=csv(categories), conditions=csv(conditions), limit=limit,
        seeds=seeds, seed=seed, max_tokens=max_tokens, out=out, run_id=run_id, no_cache=True if no_cache else None,
        **{"serving.engine": engine, "serving.base_url": base_url}, **settings_flags(setting), **more)
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


def condition_flags() -> dict[str, str]:
    """Each benchmark's own name for ``--conditions`` (its condition axis's ``flag``) -> that benchmark."""
    from localbench.registry import design_of, registered

    flags: dict[str, str] = {}
    for name in registered():
        try:
            flag = design_of(name).condition.flag
        except Exception:  # noqa: BLE001 - a broken plug-in is reported when it is used, not here
            continue
        if flag:
            flags.setdefault(flag, name)
    return flags


def _param(flag: str) -> str:
    return "condition_" + flag.replace("-", "_")


def takes_condition_flags(command):
    """``command`` with one ordinary option per benchmark's own name for --conditions (``condition_flags``),
    handed to it as ``named_conditions={flag: value}`` for ``spec_from_flags``: typer reads the options
    from the signature, and the names are the designs', not this module's."""
    import functools
    import inspect

    flags = condition_flags()
    sig = inspect.signature(command, eval_str=True)
    extra = [inspect.Parameter(_param(flag), inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        Optional[str], typer.Option(f"--{flag}", help=f"benchmark '{bench}''s name for --conditions; without --benchmark "
                                                      f"or --spec it picks '{bench}'")])
             for flag, bench in flags.items()]

    @functools.wraps(command)
    def with_flags(**kw: Any) -> Any:
        given = {flag: kw.pop(_param(flag), None) for flag in flags}
        return command(**kw, named_conditions={f: v for f, v in given.items() if v is not None})

    with_flags.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[p for p in sig.parameters.values() if p.name != "named_conditions"] + extra)
    return with_flags


def _condition(conditions: dict[str, str], benchmark: Optional[str], spec_file: Optional[Path]
               ) -> tuple[Optional[str], Optional[str]]:
    """(benchmark, conditions) from a benchmark's own name for --conditions: the benchmark that
    declares it, unless --benchmark names another (refused) or --spec names one."""
    from localbench.errors import UserError

    if not conditions:
        return benchmark, None
    owners = condition_flags()
    flag, value = next(iter(conditions.items()))
    owner = owners.get(flag)
    if benchmark is not None and benchmark != owner:
        raise UserError(f"--{flag} is benchmark '{owner}''s name for --conditions; benchmark '{benchmark}' takes --conditions")
    return (benchmark or (owner if spec_file is None else None)), value
