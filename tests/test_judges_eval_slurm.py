"""`localbench judges eval --slurm`: one job per judge into one eval directory, then a report job.

Golden files (tests/golden/slurm/judges-eval-3/): the dry run of three judges (two presets and a
synthetic one) through the real CLI, the temporary folder written as /EVAL. Accept a change with
    LOCALBENCH_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_judges_eval_slurm.py
Also: eval.json keeps what every judge's job recorded when they write it at once, and (on the
local Slurm cluster) the jobs of two synthetic judges and the report job run for real.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from localbench.cli import app
from localbench.judging.gold import write_gold
from localbench.judging.gold_eval import EvalConfig, write_config
from test_slurm_cluster import cluster  # noqa: F401  (a fixture: the local test cluster)
from test_slurm_render import GOLDEN, bash_syntax_ok, check_golden

LOCALBENCH = str(Path(sys.prefix) / "bin" / "localbench")
JUDGES = "qwen3-8b,gemma-3-12b-it,noisy:0.1,0.2"
OPTIONS = {"slurm": {"gres": "gpu:1", "partition": "gpu", "time": "04:00:00", "cpus_per_task": 8, "mem": "64G",
                     "venv": "$HOME/venvs/localbench", "extra_sbatch": ["--exclusive"]}}


@pytest.fixture(scope="module")
def gold(tmp_path_factory) -> Path:
    from localbench.benchmarks.asb.loaders import load_scenarios
    from localbench.benchmarks.asb.planting import build_gold

    path = tmp_path_factory.mktemp("gold") / "gold.jsonl"
    write_gold(path, build_gold(load_scenarios("builtin", ["CD"]).scenarios, seed=0))
    return path


def dry_run(tmp_path: Path, gold: Path, *extra: str) -> dict[str, str]:
    opts = tmp_path / "slurm.yaml"
    opts.write_text(yaml.safe_dump(OPTIONS))
    out = tmp_path / "eval"
    r = CliRunner().invoke(app, ["judges", "eval", "--judges", JUDGES, "--gold", str(gold), "--out", str(out),
                                 "--slurm", "--slurm-options", str(opts), "--dry-run", *extra])
    assert r.exit_code == 0, r.output
    folder = out / "slurm" / "dry-run"
    files = {p.name: p.read_text() for p in sorted(folder.glob("*.sbatch"))}
    files["commands.txt"] = r.stdout
    return {k: v.replace(str(gold.parent), "/GOLD").replace(str(tmp_path), "/EVAL") for k, v in files.items()}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, gold) -> dict[str, str]:
    import os

    tmp = tmp_path_factory.mktemp("ev")
    here = os.getcwd()
    os.chdir(tmp)  # the jobs run where eval is called from: the temporary folder, so goldens do not depend on it
    try:
        return dry_run(tmp, gold, "--seeds", "3", "--shuffle")
    finally:
        os.chdir(here)


def test_judges_eval_matches_golden(rendered, tmp_path):
    assert sorted(rendered) == ["commands.txt", "eval-gemma-3-12b-it.sbatch", "eval-noisy_0.1_0.2.sbatch",
                                "eval-qwen3-8b.sbatch", "report.sbatch"]
    for name, text in rendered.items():
        if name.endswith(".sbatch"):
            bash_syntax_ok(text, tmp_path)
    check_golden(GOLDEN / "judges-eval-3", rendered)


def test_one_job_per_judge_with_the_eval_settings_and_a_report_after_them(rendered):
    for judge, script in (("qwen3-8b", "eval-qwen3-8b.sbatch"), ("noisy:0.1,0.2", "eval-noisy_0.1_0.2.sbatch")):
        text = rendered[script]
        assert f"localbench judges eval --judge {judge} --gold /GOLD/gold.jsonl --out /EVAL/eval" in text
        assert "--seeds 3 --shuffle" in text and text.rstrip().endswith("lb_exit 0")
        assert "--no-report" in text
    # a judge that loads a model gets the GPU; a synthetic judge and the report job do not
    assert "#SBATCH --gres=gpu:1\n" in rendered["eval-qwen3-8b.sbatch"]
    assert "#SBATCH --exclusive\n" in rendered["eval-qwen3-8b.sbatch"]
    for cpu in ("eval-noisy_0.1_0.2.sbatch", "report.sbatch"):
        assert "--gres" not in rendered[cpu] and "--exclusive" not in rendered[cpu], cpu
    lines = [x for x in rendered["commands.txt"].splitlines() if x.startswith("sbatch")]
    assert len(lines) == 4
    assert "--dependency=afterany:'<qwen3-8b>:<gemma-3-12b-it>:<noisy:0.1,0.2>'" in lines[-1] or \
        "'--dependency=afterany:<qwen3-8b>:<gemma-3-12b-it>:<noisy:0.1,0.2>'" in lines[-1]


def test_dry_run_and_options_need_slurm(tmp_path, gold):
    r = CliRunner().invoke(app, ["judges", "eval", "--judges", "oracle", "--gold", str(gold), "--out",
                                 str(tmp_path / "e"), "--dry-run"])
    assert r.exit_code != 0 and "--slurm" in r.output


def test_eval_json_keeps_what_another_job_wrote_meanwhile(tmp_path):
    """Two jobs read eval.json before either wrote it (each knows only its own judge): the second
    write keeps the first's judge and model identity."""
    out = tmp_path / "ev"
    a = EvalConfig(judges=["judge-a"], judge_models={"judge-a": {"identity": {"preset": "judge-a"}}})
    b = EvalConfig(judges=["judge-b"], judge_models={"judge-b": {"identity": {"preset": "judge-b"}}})
    write_config(out, a)
    write_config(out, b)
    on_disk = json.loads((out / "eval.json").read_text())
    assert on_disk["judges"] == ["judge-a", "judge-b"]
    assert set(on_disk["judge_models"]) == {"judge-a", "judge-b"}


def test_two_evals_into_one_directory_at_once_keep_both_judges(tmp_path, gold):
    """The real CLI, two processes at once (what two Slurm jobs do): both judges' facts survive."""
    out = tmp_path / "ev"
    procs = [subprocess.Popen([LOCALBENCH, "judges", "eval", "--judge", j, "--gold", str(gold), "--out", str(out),
                               "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for j in ("oracle", "noisy:0.1,0.2")]
    for p in procs:
        output, _ = p.communicate(timeout=240)
        assert p.returncode == 0, output
    cfg = json.loads((out / "eval.json").read_text())
    assert set(cfg["judges"]) == {"oracle", "noisy:0.1,0.2"}
    assert set(cfg["judge_models"]) == {"oracle", "noisy:0.1,0.2"}
    presets = {json.loads(x)["preset"] for x in (out / "judgments.jsonl").read_text().splitlines() if x.strip()}
    assert presets == {"oracle", "noisy:0.1,0.2"}


@pytest.mark.slurm
@pytest.mark.timeout(600)
def test_judges_eval_jobs_run_on_the_cluster(cluster, tmp_path, gold):  # noqa: F811  (the fixture)
    """Two synthetic judges as two jobs and the report job after them, on the local test cluster."""
    opts = tmp_path / "slurm.yaml"
    opts.write_text(yaml.safe_dump({"slurm": {"partition": "debug", "time": "00:10:00", "cpus_per_task": 1,
                                              "mem": "2G", "signal": None, "venv": sys.prefix}}))
    out = tmp_path / "eval"
    r = subprocess.run([LOCALBENCH, "judges", "eval", "--judges", "oracle,noisy:0.2,0.2", "--gold", str(gold),
                        "--out", str(out), "--slurm", "--slurm-options", str(opts)], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    ids = json.loads((out / "slurm" / "submission.json").read_text())["jobs"]
    try:
        deadline = time.monotonic() + 300
        while subprocess.run(["squeue", "-h", "-j", ",".join(ids.values())], capture_output=True,
                             text=True).stdout.strip() and time.monotonic() < deadline:
            time.sleep(2)
        logs = "\n".join(p.read_text() for p in (out / "slurm" / "logs").glob("*.out"))
        states = {k: json.loads((out / "slurm" / "state" / f"{t}.exit").read_text())["exit_code"]
                  for k, t in (("oracle", "eval-oracle"), ("noisy", "eval-noisy_0.2_0.2"), ("report", "report"))}
        assert states == {"oracle": 0, "noisy": 0, "report": 0}, logs
        cfg = json.loads((out / "eval.json").read_text())
        assert set(cfg["judge_models"]) == {"oracle", "noisy:0.2,0.2"}
        report = (out / "report.md").read_text()
        assert "oracle" in report and "noisy:0.2,0.2" in report  # the report job saw both judges' answers
    finally:
        subprocess.run(["scancel", *ids.values()], capture_output=True)


def test_a_store_opened_while_another_job_writes_a_line_waits_for_that_line(tmp_path):
    """A job opening judgments.jsonl cuts a torn last line (a crash's); while another job is
    writing that line (holding the eval folder's lock), it waits instead, and the line survives."""
    import threading

    from localbench.judging.gold_eval import SharedStore, config_lock

    path = tmp_path / "judgments.jsonl"
    line = json.dumps({"key": "other-job|item|base|0", "text": "y" * 200}) + "\n"
    opened: list[SharedStore] = []
    with config_lock(tmp_path):  # what the other job's append holds while it writes
        with open(path, "a") as f:
            f.write(line[:60])
            f.flush()
            t = threading.Thread(target=lambda: opened.append(SharedStore(path, tmp_path)))
            t.start()
            t.join(0.5)
            assert not opened  # it waits for the writer
            f.write(line[60:])
    t.join(10)
    assert opened and opened[0].keys() == {"other-job|item|base|0"}
    assert path.read_text() == line
    assert opened[0].append({"key": "this-job|item|base|0"})
    assert len(path.read_text().splitlines()) == 2


def test_each_judge_job_has_a_response_cache_of_its_own(rendered):
    assert "--cache /EVAL/eval/slurm/cache/eval-qwen3-8b.sqlite" in rendered["eval-qwen3-8b.sbatch"]
    assert "--cache /EVAL/eval/slurm/cache/eval-gemma-3-12b-it.sqlite" in rendered["eval-gemma-3-12b-it.sbatch"]
