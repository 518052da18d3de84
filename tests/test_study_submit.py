"""`localbench study submit`: a study's runs as Slurm jobs, one judge server per judge preset.

Golden files (tests/golden/slurm/study-3x3/): `study submit --dry-run` of 3 models x 3 benchmarks
through the real CLI, the temporary folder written as /STUDY. Accept a change with
    LOCALBENCH_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_study_submit.py
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from localbench.cli import app
from test_slurm_render import GOLDEN, bash_syntax_ok, check_golden

MODELS = ["qwen2.5-7b-instruct", "llama-3.1-8b-instruct", "mistral-7b-instruct-v0.3"]
STUDY = {
    "name": "study-3x3",
    "models": MODELS,
    "judge": "gemma-3-12b-it",
    "out": "runs",
    "serving": {"engine": "vllm"},
    "slurm": {"gres": "gpu:1", "partition": "gpu", "cpus_per_task": 8, "mem": "64G", "time": "08:00:00",
              "venv": "$HOME/venvs/localbench", "judge_server": {"time": "1-00:00:00"}},
    "benchmarks": {"asb": {"scenarios": "builtin", "conditions": ["L0"]},
                   "agentleak": {"scenarios": "builtin", "conditions": ["single"]},
                   "sopri": {"scenarios": "builtin", "conditions": ["single"]}},
}


def write_study(folder: Path, study: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def dry_run(tmp_path: Path, study: dict) -> dict[str, str]:
    """Every script `study submit --dry-run` writes, and its printed commands (commands.txt)."""
    path = write_study(tmp_path / "study", study)
    out = tmp_path / "dry"
    r = CliRunner().invoke(app, ["study", "submit", str(path), "--dry-run", "--out", str(out)])
    assert r.exit_code == 0, r.output
    files = {str(p.relative_to(out)): p.read_text() for p in sorted(out.rglob("*.sbatch"))}
    files["commands.txt"] = r.stdout
    return {k: v.replace(str(tmp_path), "/STUDY") for k, v in files.items()}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, str]:
    return dry_run(tmp_path_factory.mktemp("s3x3"), STUDY)


def test_study_3x3_matches_golden(rendered, tmp_path):
    assert len([k for k in rendered if k.endswith("array.sbatch")]) == 9
    assert len([k for k in rendered if k.endswith("merge.sbatch")]) == 9
    for name, text in rendered.items():
        if name.endswith(".sbatch"):
            bash_syntax_ok(text, tmp_path)
    check_golden(GOLDEN / "study-3x3", rendered)


def test_one_judge_server_for_a_preset_shared_by_every_benchmark(rendered):
    servers = sorted(k for k in rendered if k.startswith("judge-"))
    assert servers == ["judge-gemma-3-12b-it-stop.sbatch", "judge-gemma-3-12b-it.sbatch"]
    server = rendered["judge-gemma-3-12b-it.sbatch"]
    assert "#SBATCH --gres=gpu:1\n" in server and "#SBATCH --time=1-00:00:00\n" in server
    assert "localbench serve gemma-3-12b-it --host 0.0.0.0" in server  # merge jobs reach it from other nodes
    # the URL file is written, atomically, only after the server answered, and removed when it ends
    url_file = "/STUDY/study/runs/slurm/judge-gemma-3-12b-it.url"
    assert f"URL_FILE={url_file}\n" in server
    ready, write = server.index("lb_ready judge"), server.index('>"$URL_FILE.tmp" && mv -f "$URL_FILE.tmp" "$URL_FILE"')
    assert ready < write
    assert "trap 'rm -f \"$URL_FILE\"' EXIT" in server


def test_merge_jobs_hold_no_gpu_with_a_remote_judge(rendered):
    url_file = "/STUDY/study/runs/slurm/judge-gemma-3-12b-it.url"
    merges = {k: v for k, v in rendered.items() if k.endswith("merge.sbatch")}
    for name, text in merges.items():
        assert "--gres" not in text and "gpu" not in text.split("set -eo pipefail")[0], name
        assert f"localbench slurm wait-judge {url_file}" in text, name
        assert f'--engine openai --base-url "$(cat {url_file})"' in text, name
        assert text.index("wait-judge") < text.index("lb_step judge") < text.index("lb_step score"), name
    arrays = [v for k, v in rendered.items() if k.endswith("array.sbatch")]
    assert all("#SBATCH --gres=gpu:1\n" in a for a in arrays)


def test_dependencies(rendered):
    lines = [x for x in rendered["commands.txt"].splitlines() if x.startswith("sbatch")]
    assert len(lines) == 9 + 1 + 9 + 1
    server = next(x for x in lines if x.endswith("<judge:gemma-3-12b-it>") and "judge-gemma-3-12b-it.sbatch" in x)
    assert server.count("afterany:<array:") == 9 and "?" in server  # once any of its arrays has ended
    merge = next(x for x in lines if "asb/qwen2.5-7b-instruct/merge.sbatch" in x)
    assert "--dependency=afterok:<array:asb/qwen2.5-7b-instruct>" in merge
    stop = next(x for x in lines if "stop.sbatch" in x)
    assert stop.count("<merge:") == 9 and "--dependency=afterany:" in stop
    assert "'<judge:gemma-3-12b-it>'" in stop.split("stop.sbatch", 1)[1]  # the server's id: its argument


def test_a_judge_per_benchmark_gets_its_own_server_and_none_needs_none(tmp_path):
    study = {**STUDY, "benchmarks": {"asb": {"scenarios": "builtin", "conditions": ["L0"], "judge": "qwen3-8b"},
                                     "agentleak": {"scenarios": "builtin", "conditions": ["single"], "judge": "none"}}}
    files = dry_run(tmp_path, study)
    assert sorted(k for k in files if k.startswith("judge-") and not k.endswith("stop.sbatch")) == \
        ["judge-qwen3-8b.sbatch"]
    for m in MODELS:
        leak = files[f"agentleak/{m}/merge.sbatch"]
        assert "wait-judge" not in leak and "--base-url" not in leak  # judging off (a no-op step): no server
        assert "judge-qwen3-8b.url" in files[f"asb/{m}/merge.sbatch"]


def test_a_bad_judge_server_field_is_named(tmp_path):
    study = {**STUDY, "slurm": {**STUDY["slurm"], "judge_server": {"time": "soon"}}}
    path = write_study(tmp_path, study)
    r = CliRunner().invoke(app, ["study", "submit", str(path), "--dry-run", "--out", str(tmp_path / "d")])
    assert r.exit_code != 0
    assert "slurm.judge_server" in str(r.exception) + r.output


def test_without_the_url_file_the_same_merge_job_would_hold_the_gpu(tmp_path):
    """The GPU-free merge job is the remote judge's doing: the same run submitted on its own (its
    judge served by the merge job itself) asks for the GPU its judge preset needs."""
    from localbench.slurm.plan import make_plan
    from localbench.slurm.render import render_merge
    from localbench.slurm.study import plan_study
    from localbench.study.spec import read_study

    plan = plan_study(read_study(write_study(tmp_path, STUDY)))
    run, rp = plan.runs[0]
    assert rp.options.judge_url_file and "--gres" not in render_merge(rp).script
    alone = {k: v for k, v in run.spec.slurm.items() if k != "judge_server"}
    own = make_plan(run.spec.model_copy(update={"slurm": alone}), workdir=str(tmp_path))
    assert "#SBATCH --gres=gpu:1\n" in render_merge(own).script


def test_a_second_submit_leaves_out_the_runs_already_reported(tmp_path):
    from localbench.runlog import RunPaths
    from localbench.study.plan import plan_runs
    from localbench.study.spec import read_study

    path = write_study(tmp_path / "study", STUDY)
    done = plan_runs(read_study(path))[0]  # asb × qwen2.5-7b-instruct, as if reported
    paths = RunPaths(done.run_dir)
    paths.scores_path.parent.mkdir(parents=True)
    paths.scores_path.write_text("{}")
    paths.report_md.write_text("# report")
    r = CliRunner().invoke(app, ["study", "submit", str(path), "--dry-run", "--out", str(tmp_path / "dry")])
    assert r.exit_code == 0, r.output
    assert "1 run(s) already reported, not submitted again: asb × qwen2.5-7b-instruct" in r.stdout
    scripts = {str(p.relative_to(tmp_path / "dry")) for p in (tmp_path / "dry").rglob("*.sbatch")}
    assert "asb/qwen2.5-7b-instruct/array.sbatch" not in scripts and len(scripts) == 8 * 2 + 2
    assert "<merge:asb/qwen2.5-7b-instruct>" not in r.stdout


@pytest.mark.parametrize("judge, gres, says", [
    ("llama-3.3-70b-instruct", "gpu:h100:1", "asks for 1 GPU(s)"),  # its preset is tensor parallel 4
    ("gemma-3-12b-it", "gpu:t4:1", "does not fit"),  # 12B in bf16 on 16 GB
])
def test_a_judge_server_too_small_for_its_preset_is_refused(tmp_path, judge, gres, says):
    study = {**STUDY, "judge": judge, "slurm": {**STUDY["slurm"], "judge_server": {"gres": gres}}}
    path = write_study(tmp_path, study)
    r = CliRunner().invoke(app, ["study", "submit", str(path), "--dry-run", "--out", str(tmp_path / "d")])
    assert r.exit_code != 0
    assert "field 'slurm.judge_server.gres'" in str(r.exception) and says in str(r.exception), r.exception
    ok = CliRunner().invoke(app, ["study", "submit", str(path), "--dry-run", "--out", str(tmp_path / "d"),
                                  "--no-fit-check"])
    assert ok.exit_code == 0, ok.output


def test_wait_judge_gives_up_at_once_when_the_server_job_ended_and_says_why_on_timeout(tmp_path):
    import time

    from localbench.errors import UserError
    from localbench.slurm.judge_url import server_state_file, wait_for_judge

    url_file = tmp_path / "judge-x.url"
    with pytest.raises(UserError, match="no judge server URL within 0 s"):
        wait_for_judge(url_file, timeout=0.2, poll=0.05)
    state = server_state_file(url_file)
    assert state == tmp_path / "state" / "judge-x.exit"
    state.parent.mkdir()
    state.write_text('{"task": "judge-x", "exit_code": 1}')
    t0 = time.monotonic()
    with pytest.raises(UserError, match="ended without serving"):
        wait_for_judge(url_file, timeout=600, poll=0.05)
    assert time.monotonic() - t0 < 5
    url_file.write_text("http://127.0.0.1:9/v1\n")  # a URL nothing answers at
    with pytest.raises(UserError, match="did not answer within"):
        wait_for_judge(url_file, timeout=0.2, poll=0.05)
