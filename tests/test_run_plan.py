"""Plan once (issue #44 item 6): a run resolves each role's preset, engine, URL and memory share
once, into a run plan (``localbench.runtime.plan``) that its stages and engines read, written to
the run directory as plan.json (recorded in spec.yaml), which reads back to the plan the engines
were opened with."""

from __future__ import annotations

import json
import sys
from collections import Counter

import pytest
import yaml
from typer.testing import CliRunner

from localbench.cli import app
from localbench.runtime.plan import PLAN_FILE, PlanError, RunPlan
from localbench.spec import RunSpec


def _entry(e) -> tuple:
    return e.engine, e.url, e.gpu_memory_utilization, e.preset.model_dump(mode="json")


@pytest.fixture(scope="module")
def planned_run(tmp_path_factory, tiny_dir):
    """One `localbench run` of AgentSocialBench on the tiny model (one scenario, one round; the
    agent's model judges, pipelined into its engine), counting each role's lookups, the machine checks, the preset loads and what every
    engine was opened with."""
    import localbench.serving.presets as presets
    import localbench.serving.session as session

    tmp = tmp_path_factory.mktemp("plan")
    counts: Counter = Counter()
    opened: dict[str, tuple] = {}
    mp = pytest.MonkeyPatch()
    model_for, check_here, load, open_client = RunSpec.model_for, session.check_models_here, session.load_preset, session.open_client

    def counted_model_for(self, role):
        if sys._getframe(1).f_globals.get("__name__") != "localbench.spec":  # the spec's own derived fields aside
            counts[("model_for", role)] += 1
        return model_for(self, role)

    def counted_check(*a, **k):
        counts["check_models_here"] += 1
        return check_here(*a, **k)

    def counted_load(name, *a, **k):
        counts[("load_preset", sys._getframe(1).f_code.co_name)] += 1
        return load(name, *a, **k)

    def recorded_open(preset, serving, *a, role="", **k):
        if isinstance(preset, session.RoleServing):
            opened[role] = _entry(preset)
        else:
            counts["opened by name"] += 1
        return open_client(preset, serving, *a, role=role, **k)

    mp.setattr(RunSpec, "model_for", counted_model_for)
    mp.setattr(session, "check_models_here", counted_check)
    mp.setattr(session, "load_preset", counted_load)
    mp.setattr(session, "open_client", recorded_open)
    import localbench.runtime.clients as clients
    import localbench.runtime.plan as plan_module

    mp.setattr(clients, "open_client", recorded_open)
    mp.setattr(plan_module, "check_models_here", counted_check)
    mp.setattr(presets, "load_preset", counted_load)
    spec = tmp / "spec.yaml"
    spec.write_text(yaml.safe_dump({"benchmark": "asb", "categories": ["CD"], "conditions": ["L0"], "limit": 1,
                                    "max_tokens": 24, "judge_max_tokens": 48, "max_rounds": {"CD": 1}}))
    try:
        r = CliRunner().invoke(app, ["run", "--spec", str(spec), "--agent", "tiny-random", "--engine", "hf",
                                     "--out", str(tmp / "runs"), "--run-id", "r", "--no-progress"])
    finally:
        mp.undo()
    assert r.exit_code == 0, (r.output, r.exception)
    return tmp / "runs" / "r", counts, opened, spec


def test_a_run_resolves_each_role_once(planned_run):
    run, counts, *_ = planned_run
    roles = RunSpec(benchmark="asb").design.role_names
    assert {role: counts[("model_for", role)] for role in roles} == {role: 1 for role in roles}
    assert counts["check_models_here"] == 1  # engines, URLs and memory shares chosen once, for every stage
    planned = RunPlan.read(run)
    assert counts[("load_preset", "<dictcomp>")] == len(planned.served)  # each served role's preset loaded once
    assert counts[("load_preset", "open_client")] == 0 and counts["opened by name"] == 0  # engines open on the plan


def test_the_plan_on_disk_is_what_the_engines_were_opened_with(planned_run):
    run, _, opened, _ = planned_run
    planned = RunPlan.read(run)
    assert opened and {role: _entry(planned.entry(role)) for role in opened} == opened
    assert planned.run_id == "r" and planned.benchmark == "asb" and planned.judge_phase == "pipelined"  # the judge is the agent's model
    assert planned.models["agent"] == "tiny-random" and all(e.engine == "hf" for e in planned.served.values())
    assert RunPlan.from_dict(json.loads(json.dumps(planned.to_dict()))) == planned  # it round-trips
    record = yaml.safe_load((run / "spec.yaml").read_text())["plan"]
    import hashlib

    assert record["file"] == PLAN_FILE and record["sha256"] == hashlib.sha256((run / PLAN_FILE).read_bytes()).hexdigest()


def test_a_bad_plan_file_names_the_file_and_field(tmp_path):
    (tmp_path / PLAN_FILE).write_text(json.dumps({"version": 1, "run_id": "r"}))
    with pytest.raises(PlanError, match=rf"{PLAN_FILE}: field '(roles|benchmark)' is missing"):
        RunPlan.read(tmp_path)
    with pytest.raises(PlanError, match="no run plan"):
        RunPlan.read(tmp_path / "nowhere")


def test_compare_names_a_runs_judge_from_its_plan(planned_run, tmp_path):
    """`compare` reads who judged a run from its plan.json: the tiny model judged itself there, so
    its numbers are marked self-judged even where spec.yaml's record says otherwise (and, without
    the plan, they are not)."""
    import shutil

    from localbench.study.compare import load_entries

    run = shutil.copytree(planned_run[0], tmp_path / "run", ignore=shutil.ignore_patterns("view", "cache.sqlite"))
    spec = yaml.safe_load((run / "spec.yaml").read_text())
    spec["resolved_models"]["judge"] = "smollm2-135m"
    (run / "spec.yaml").write_text(yaml.safe_dump(spec))
    scores = json.loads((run / "scores.json").read_text())
    scores["judge_warnings"] = [w for w in scores["judge_warnings"] if w["pattern"] != "self_judging"]
    (run / "scores.json").write_text(json.dumps(scores))
    assert [e.self_judged for e in load_entries([run])["asb"]] == [True]
    (run / PLAN_FILE).unlink()
    assert [e.self_judged for e in load_entries([run])["asb"]] == [False]


def test_simulate_alone_plans_the_simulation_roles(planned_run, tmp_path):
    """`localbench simulate` plans the roles it opens (not the judge, whose stage comes later) and
    writes that plan; resumed here, with every simulation done."""
    import shutil

    run, *_, spec = planned_run
    shutil.copytree(run, tmp_path / "r", ignore=shutil.ignore_patterns(PLAN_FILE, "view"))
    r = CliRunner().invoke(app, ["simulate", "--spec", str(spec), "--agent", "tiny-random", "--engine", "hf",
                                 "--out", str(tmp_path), "--run-id", "r", "--no-progress"])
    assert r.exit_code == 0, (r.output, r.exception)
    planned = RunPlan.read(tmp_path / "r")
    assert sorted(planned.served) == sorted(RunSpec(benchmark="asb").design.simulation_roles)
    assert planned.judge_phase == "staged"
