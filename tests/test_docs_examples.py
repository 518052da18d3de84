"""examples/*.yaml, the specs for common studies (issue 35, item 3): each parses as a RunSpec,
every role resolves to a shipped preset, and a dry run (the benchmark's own check, load and plan,
as `localbench run` does before it starts an engine) plans the simulations it says it runs. The
`localbench` commands in their comments name existing subcommands and options."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer

from localbench.registry import get_benchmark
from localbench.cli import app
from localbench.serving.presets import load_preset
from localbench.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
SPECS = [p for p in EXAMPLES if not p.stem.startswith("study-")]  # run specs; study-*.yaml are study files
STUDIES = [p for p in EXAMPLES if p.stem.startswith("study-")]


def test_there_is_an_example_per_common_study():
    names = {p.stem for p in EXAMPLES}
    assert {"asb-ladder-8b", "agentleak-single-vs-multi", "sopri-all-attackers", "judge-comparison"} <= names


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_a_study_example_reads_and_plans_its_runs(path):
    """Each study file plans one run per (benchmark, model); the GPU study's models and judges are
    GPU presets, the CPU one's are not (it is the one the tests run)."""
    from localbench.study.plan import plan_runs
    from localbench.study.spec import read_study

    study = read_study(path)
    runs = plan_runs(study)
    assert len(runs) == len(study.models) * len(study.benchmarks)
    for r in runs:
        sim = get_benchmark(r.benchmark).simulator()
        scenarios, _ = sim.load(r.spec)
        assert sim.plan(r.spec, scenarios), (path.name, r.benchmark, r.model)
    gpu = {load_preset(r.spec.model_for(role)).needs_gpu for r in runs for role in r.spec.design.role_names
           if r.spec.model_for(role) != "none"}
    assert gpu == ({False} if path.stem == "study-cpu" else {True}), path.name


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_an_example_parses_resolves_and_plans(path):
    spec = load_spec(path)
    for role in spec.design.role_names:  # every role played by a preset that exists
        preset = load_preset(spec.model_for(role))
        assert preset.needs_gpu, f"{path.name}: role {role} is played by a CPU preset ({preset.name})"
    sim = get_benchmark(spec.benchmark).simulator()
    sim.check(spec)
    scenarios, _ = sim.load(spec)
    units = sim.plan(spec, scenarios)
    assert scenarios and len(units) == len(scenarios) * len(spec.conditions) * spec.seeds, path.name
    assert {u.key.split("|")[1] for u in units} == set(spec.conditions)


def _commands(text: str) -> list[list[str]]:
    out = []
    for line in text.splitlines():
        m = re.match(r"#\s+\.venv/bin/localbench (.+)$", line)
        if m:
            out.append(shlex.split(m.group(1)))
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_commands_an_example_shows_exist(path):
    root = typer.main.get_command(app)
    commands = _commands(path.read_text())
    assert commands, f"{path.name} shows no command to run it"
    for argv in commands:
        cmd, words = root, list(argv)
        while getattr(cmd, "commands", None):
            cmd = cmd.commands[words.pop(0)]
        known = {o for p in cmd.params for o in [*p.opts, *p.secondary_opts]}
        flags = {w.split("=")[0] for w in words if w.startswith("--")}
        assert flags <= known, f"{path.name}: {' '.join(argv)}: unknown {sorted(flags - known)}"
        if "--spec" in words:
            assert (ROOT / words[words.index("--spec") + 1]).is_file()
