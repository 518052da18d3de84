"""A command parses its spec once and loads its scenarios once, and hands both down to its stages
(issue #32: "resolve once, at the top")."""

from __future__ import annotations

import sys
from collections import Counter

import pytest
import yaml
from typer.testing import CliRunner

from localbench.cli import app
from localbench.spec import RunSpec


@pytest.fixture
def counts(monkeypatch) -> Counter:
    """Spec parses (RunSpec validations of a command's spec: rundir's comparison of a resumed run
    with its own record is not one), scenario loads (SopriBench's loader) and engine choices so far."""
    import localbench.benchmarks.sopri.loaders as loaders

    n: Counter = Counter()
    validate = RunSpec.model_validate.__func__
    load_users = loaders.load_users

    def counted_validate(cls, *a, **k):
        if not sys._getframe(1).f_globals.get("__name__", "").startswith("localbench.runlog"):
            n["parses"] += 1
        return validate(cls, *a, **k)

    def counted_load(*a, **k):
        n["loads"] += 1
        return load_users(*a, **k)

    monkeypatch.setattr(RunSpec, "model_validate", classmethod(counted_validate))
    monkeypatch.setattr(loaders, "load_users", counted_load)
    import localbench.serving.session as session

    pick = session.pick_engine

    def counted_pick(*a, **k):
        n["engine choices"] += 1
        return pick(*a, **k)

    monkeypatch.setattr(session, "pick_engine", counted_pick)
    return n


def _once(counts: Counter, *args: str) -> Counter:
    counts.clear()
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 0, (r.output, r.exception)
    engines = counts.pop("engine choices", 0)
    assert counts == {"parses": 1, "loads": 1}, (args[0], dict(counts))
    return Counter({"engine choices": engines})


def test_each_command_parses_the_spec_and_loads_the_scenarios_once(tmp_path, tiny_dir, counts):
    spec = tmp_path / "spec.yaml"  # with --agent and --max-rounds: the flags that asked for the file again
    spec.write_text(yaml.safe_dump({"benchmark": "sopri", "levels": ["oracle", "none"], "limit": 1,
                                    "extra": {"judge": "exact"}}))
    flags = ["--spec", str(spec), "--agent", "tiny-random", "--engine", "hf", "--max-rounds", "2",
             "--out", str(tmp_path / "runs"), "--run-id", "r", "--no-progress"]
    run = str(tmp_path / "runs" / "r")
    chosen = _once(counts, "run", *flags)
    from localbench.pipeline import model_roles, spec_of

    assert chosen["engine choices"] == len(model_roles(spec_of(run)))  # once per role, checked and opened on it
    _once(counts, "simulate", *flags)  # resumed: every simulation is done
    _once(counts, "judge", run, "--engine", "hf")
    _once(counts, "score", run)
