"""Studies (issue 44): one file for models × benchmarks, validated in one pass, run one engine at a
time with each benchmark's judge loaded once, resumed without simulating anything twice. The
shipped CPU example (examples/study-cpu.yaml: SmolLM2 and the tiny model × AgentSocialBench and
AgentLeak) runs for real, copied beside the test's own folder so its runs land there."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from localbench.study.plan import plan_runs
from localbench.study.spec import StudyError, read_study

ROOT = Path(__file__).resolve().parents[1]
CPU_STUDY = ROOT / "examples" / "study-cpu.yaml"


def _write(tmp_path: Path, data: dict, name: str = "study.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data))
    return p


# ---- the file -----------------------------------------------------------------------------------


def test_planning_the_8b_example_creates_no_run_directory(tmp_path):
    """`study plan` only reads: the 8B example's SopriBench runs ask whether a run folder records a
    taxonomy, and asking once created every run folder (empty) beside the study file."""
    from typer.testing import CliRunner

    from localbench.cli import app

    study = tmp_path / "study-8b.yaml"
    shutil.copy(ROOT / "examples" / "study-8b.yaml", study)
    result = CliRunner().invoke(app, ["study", "plan", str(study)])
    assert result.exit_code == 0, result.output
    assert "sopri" in result.output
    assert sorted(q.name for q in tmp_path.iterdir()) == ["study-8b.yaml"]

def test_every_problem_of_a_study_file_is_named_in_one_pass(tmp_path):
    bad = {"models": ["tiny-random", "no-such-preset"], "judge": "tiny-random",
           "benchmarks": {"asb": {"conditions": ["L9"], "overrides": {"other-model": {"limit": 1}},
                                  "out": "elsewhere"},
                          "nosuchbench": {}}}
    with pytest.raises(StudyError) as e:
        plan_runs(read_study(_write(tmp_path, bad)))
    text = str(e.value)
    for named in ("field 'models': ", "no-such-preset", "field 'benchmarks.nosuchbench'",
                  "field 'benchmarks.asb.overrides.other-model'", "field 'benchmarks.asb.out'",
                  "field 'benchmarks.asb.judge': 'tiny-random' is also a model under test", "L9"):
        assert named in text, (named, text)


def test_a_study_without_a_judge_is_refused_unless_it_allows_self_judging(tmp_path):
    base = {"models": ["tiny-random", "smollm2-135m"], "benchmarks": {"asb": {"limit": 1}}}
    with pytest.raises(StudyError, match="field 'benchmarks.asb.judge': no judge for AgentSocialBench"):
        plan_runs(read_study(_write(tmp_path, base)))
    runs = plan_runs(read_study(_write(tmp_path, {**base, "allow_self_judging": True})))
    assert [(r.model, r.judge, r.self_judged) for r in runs] == [("tiny-random", "tiny-random", True),
                                                                 ("smollm2-135m", "smollm2-135m", True)]


def test_run_ids_come_from_the_resolved_specs_so_adding_a_model_adds_only_its_runs(tmp_path):
    study = {"models": ["tiny-random"], "judge": "qwen2.5-7b-instruct", "out": "runs",  # planned only: never loaded
             "benchmarks": {"asb": {"limit": 1, "conditions": ["L0"]}, "agentleak": {"limit": 1, "judge": "none"}}}
    first = {r.run_dir for r in plan_runs(read_study(_write(tmp_path, study)))}
    again = {r.run_dir for r in plan_runs(read_study(_write(tmp_path, study)))}
    more = plan_runs(read_study(_write(tmp_path, {**study, "models": ["tiny-random", "smollm2-135m"]})))
    assert first == again and len(first) == 2
    assert first < {r.run_dir for r in more} and len(more) == 4
    assert all(d.parent == (tmp_path / "runs").resolve() for d in first)  # beside the study file, from any folder


# ---- running it --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cpu_study(tmp_path_factory):
    """examples/study-cpu.yaml run once, in-process, with every engine opened counted by role."""
    from localbench.runtime import clients
    from localbench.serving import session
    from localbench.study.run import run_study

    where = tmp_path_factory.mktemp("study")
    path = where / CPU_STUDY.name
    shutil.copy(CPU_STUDY, path)
    opened: list[tuple[str, str]] = []
    real = session.open_client

    def counting(preset, serving, *a, role="", **kw):
        opened.append((role, preset if isinstance(preset, str) else preset.preset.name))  # a name, or a plan's entry
        return real(preset, serving, *a, role=role, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(session, "open_client", counting)  # the judge's (study.run)
    mp.setattr(clients, "open_client", counting)  # the simulations' (runtime.clients)
    try:
        runs, times = run_study(read_study(path))
    finally:
        mp.undo()
    return path, runs, times, opened


def test_the_cpu_example_runs_every_cell_with_one_judge_load_per_benchmark(cpu_study):
    """Every cell reported, each run opened on its own plan, and AgentSocialBench's judge, which is
    the last model's preset, judging every run on that model's engine: one engine open fewer."""
    from localbench.runlog import RunPaths

    path, runs, times, opened = cpu_study
    assert [(r.benchmark, r.model) for r in runs] == [("asb", "smollm2-135m"), ("asb", "tiny-random"),
                                                      ("agentleak", "smollm2-135m"), ("agentleak", "tiny-random")]
    for r in runs:
        assert RunPaths(r.run_dir).report_md.exists() and r.run_dir.parent == path.parent / "study-cpu-runs"
    judge_opens = [p for role, p in opened if role == "judge"]
    # asb's judge (tiny-random) is loaded once, as the last model's own engine: it judges smollm2's
    # transcripts while tiny-random simulates, and tiny-random's as each ends (no engine of its own)
    assert judge_opens == [] and times.judge_loads == 1 and times.shared_judge == ["asb"]
    from localbench.runlog import RunDir

    by = [{j.judge_model for j in RunDir(r.run_dir).judgments().read()} for r in runs[:2]]
    assert by[0] - {"rule"} == {"tiny-random"} and by[1] and by[1] <= {"tiny-random", "rule"}, by  # (the tiny model's idle turns: rule labels)
    assert [yaml.safe_load((r.run_dir / "spec.yaml").read_text())["judge"]["model"] for r in runs[:2]] == ["tiny-random"] * 2
    assert all(r.plan is not None and r.plan.served["agent"].engine == "hf" for r in runs)  # each run carries its plan
    assert runs[1].plan.judge_phase == "pipelined" and runs[0].plan.judge_phase == "staged"
    assert sorted(p for role, p in opened if role == "agent") == ["smollm2-135m", "smollm2-135m", "tiny-random", "tiny-random"]
    spec = yaml.safe_load((runs[0].run_dir / "spec.yaml").read_text())
    assert spec["spec"]["models"]["judge"] == "tiny-random"


def test_a_second_study_run_loads_nothing_and_status_says_every_cell_is_done(cpu_study):
    path = cpu_study[0]
    run = subprocess.run([sys.executable, "-m", "localbench.cli", "study", "run", str(path)],
                         capture_output=True, text=True, timeout=300, env={**_env(), "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr
    assert "judge engines loaded: 0" in run.stdout and run.stderr.count("every run already reported") == 2
    status = subprocess.run([sys.executable, "-m", "localbench.cli", "study", "status", str(path)],
                            capture_output=True, text=True, timeout=120, env=_env())
    assert "4 of 4 runs done" in status.stdout, status.stdout


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "HF_HUB_OFFLINE": "1"}


def test_a_study_killed_half_way_resumes_without_simulating_anything_twice(tmp_path):
    from localbench.runlog import RunDir, RunPaths

    study = {"name": "kill", "models": ["tiny-random", "smollm2-135m"], "judge": "none", "out": "runs",
             "serving": {"engine": "hf"},
             "benchmarks": {"agentleak": {"categories": ["finance"], "conditions": ["single"], "limit": 2,
                                          "max_rounds": {"finance": 2}, "max_tokens": 64}}}
    path = _write(tmp_path, study)
    runs = plan_runs(read_study(path))
    cmd = [sys.executable, "-m", "localbench.cli", "study", "run", str(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    first = RunPaths(runs[0].run_dir).transcripts_path
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if first.exists() and first.read_text().count("\n") >= 1:
            break
        time.sleep(0.2)
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    done_before = {r.run_dir: [t.key for t in RunDir(r.run_dir).transcripts().read()]
                   for r in runs if RunPaths(r.run_dir).transcripts_path.exists()}
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=_env())
    assert again.returncode == 0, again.stderr[-2000:]
    for r in runs:
        keys = [t.key for t in RunDir(r.run_dir).transcripts().read()]
        assert len(keys) == len(set(keys)) == 2, (r.run_dir, keys)  # every simulation once
        assert set(done_before.get(r.run_dir, [])) <= set(keys)
    assert killed, "the study finished before it could be killed: nothing was resumed"


def test_the_cpu_examples_comparison_writes_every_table_and_marks_self_judging(cpu_study):
    """`localbench study compare` (= `localbench compare STUDY.yaml`) through the real CLI: every
    table in every format and vector figures; the tiny model judged its own ASB transcripts (the
    study allows it), so its cells are marked."""
    path = cpu_study[0]
    r = subprocess.run([sys.executable, "-m", "localbench.cli", "study", "compare", str(path)],
                       capture_output=True, text=True, timeout=300, env=_env())
    assert r.returncode == 0, r.stderr[-2000:]
    out = path.parent / "compare"
    for stem in ("headline", "asb_metrics", "asb_comparisons", "agentleak_metrics", "agentleak_comparisons"):
        for ext in ("md", "tex", "csv"):
            assert (out / "tables" / f"{stem}.{ext}").exists(), (stem, ext)
    for ext in ("png", "svg", "pdf"):
        assert (out / "figures" / f"headline.{ext}").exists()
    assert (out / "compare.html").exists()
    headline = (out / "tables" / "headline.md").read_text()
    assert "smollm2-135m" in headline and "tiny-random" in headline
    row = next(line for line in headline.splitlines() if "tiny-random" in line)
    assert "§" in row  # judged by itself on AgentSocialBench
    assert "\\toprule" in (out / "tables" / "headline.tex").read_text()
