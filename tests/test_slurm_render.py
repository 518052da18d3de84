"""Rendering sbatch scripts: golden files, refusal of unsafe values, and quoting proven by bash.

Golden files: slurm/examples/<name>/ (the worked examples' rendered output) and tests/golden/slurm/
(other cases). A template change shows up as a diff; accept it with
    LOCALBENCH_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_slurm_render.py
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localbench.slurm.options import SlurmOptionsError, parse_options
from localbench.slurm.plan import make_plan
from localbench.slurm.render import _env, render_array, render_merge
from localbench.slurm.shell import UnsafeValue, quote, quote_with_vars
from localbench.spec import RunSpec, load_spec

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "slurm" / "examples"
GOLDEN = REPO / "tests" / "golden" / "slurm"
WORKDIR = "/home/you/localbench"  # a fixed submit directory, so goldens do not depend on the machine
UPDATE = os.environ.get("LOCALBENCH_UPDATE_GOLDEN") == "1"


def rendered(spec: RunSpec, where: str = "spec", shards: list[int] | None = None) -> dict[str, str]:
    plan = make_plan(spec, where, workdir=WORKDIR)
    # derived presets are checked in test_tensor_parallel_preset_and_gpu_split, not here: they copy
    # serving/*.yaml, whose edits are not template changes
    return {"array.sbatch": render_array(plan, shards).script, "merge.sbatch": render_merge(plan).script}


def check_golden(directory: Path, files: dict[str, str]) -> None:
    if UPDATE:
        for name, text in files.items():
            (directory / name).parent.mkdir(parents=True, exist_ok=True)
            (directory / name).write_text(text)
        return
    have = {str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file()} if directory.exists() else set()
    assert have == set(files), f"{directory}: golden files {sorted(have)} != rendered {sorted(files)}; " \
                               "regenerate with LOCALBENCH_UPDATE_GOLDEN=1"
    for name, text in files.items():
        want = (directory / name).read_text()
        assert text == want, f"{directory / name} differs from the rendered script; if intended, regenerate " \
                             "with LOCALBENCH_UPDATE_GOLDEN=1 and review the diff"


def bash_syntax_ok(script: str, tmp_path: Path) -> None:
    f = tmp_path / "check.sh"
    f.write_text(script)
    r = subprocess.run(["bash", "-n", str(f)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# ---- golden files ---------------------------------------------------------------------------

EXAMPLE_SPECS = sorted(EXAMPLES.glob("*.yaml"))


def test_there_are_four_examples():
    assert {p.stem for p in EXAMPLE_SPECS} == {"one-gpu", "multi-gpu-tp", "split-agent-judge", "cpu-test-queue"}


@pytest.mark.parametrize("spec_file", EXAMPLE_SPECS, ids=lambda p: p.stem)
def test_example_matches_golden(spec_file: Path, tmp_path: Path):
    files = rendered(load_spec(spec_file), str(spec_file))
    for name in ("array.sbatch", "merge.sbatch"):
        bash_syntax_ok(files[name], tmp_path)
    check_golden(EXAMPLES / spec_file.stem, files)


CASES = {
    # a resubmission over two shards, at most one at a time
    "resubmit-subset": (dict(num_shards=4, slurm={"array_concurrency": 1}), [1, 3]),
    # no warning signal, no requeue; environment from modules, conda and raw setup lines
    "env-setup": (dict(slurm={"signal": None, "requeue": False, "modules": ["gcc/12", "cuda/12.4"],
                              "conda_env": "$HOME/envs/lb", "setup": ["ulimit -n 4096"],
                              "env": {"TOKENIZERS_PARALLELISM": "false"}, "offline": False}), None),
    # custom post-merge commands with placeholders
    "after-merge": (dict(slurm={"after_merge": ["localbench score {run}", "python analyse.py --run {run} --spec {spec}"]}),
                    None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_matches_golden(case: str, tmp_path: Path):
    fields, shards = CASES[case]
    spec = RunSpec.model_validate({"run_id": case, "models": {"agent": "tiny-random"}, **fields})
    files = rendered(spec, case, shards=shards)
    for name in ("array.sbatch", "merge.sbatch"):
        bash_syntax_ok(files[name], tmp_path)
    check_golden(GOLDEN / case, files)


def test_resubmit_array_lists_only_given_shards():
    spec = RunSpec.model_validate({"run_id": "x", "num_shards": 4, "slurm": {"array_concurrency": 1}})
    script = rendered(spec, shards=[3, 1])["array.sbatch"]
    assert "#SBATCH --array=1,3%1\n" in script
    full = rendered(spec)["array.sbatch"]
    assert "#SBATCH --array=0-3%1\n" in full


def test_merge_steps_run_the_stages_after_simulation():
    spec = RunSpec.model_validate({"run_id": "x"})
    m = rendered(spec)["merge.sbatch"]
    assert "lb_step judge bash -c" in m and "lb_step score bash -c" in m and "lb_step report bash -c" in m
    per_shard = RunSpec.model_validate({"run_id": "x", "slurm": {"judge_per_shard": True, "gres": "gpu:1"}})
    files = rendered(per_shard)
    assert "lb_step judge bash -c" not in files["merge.sbatch"]
    assert "--gres" not in files["merge.sbatch"]  # the merge job does not hold GPUs it does not use
    assert 'localbench judge "$SHARD_RUN"' in files["array.sbatch"]


def test_each_job_gets_threads_from_its_own_cpus():
    """OMP_NUM_THREADS follows the job's own --cpus-per-task: a merge job with fewer CPUs than the
    array's tasks (a CPU judge, say) must not start the array's thread count."""
    spec = RunSpec.model_validate({"run_id": "x", "slurm": {"cpus_per_task": 16, "merge_job": {"cpus_per_task": 2}}})
    files = rendered(spec)
    assert "#SBATCH --cpus-per-task=16\n" in files["array.sbatch"]
    assert "export OMP_NUM_THREADS=16\n" in files["array.sbatch"]
    assert "#SBATCH --cpus-per-task=2\n" in files["merge.sbatch"]
    assert "export OMP_NUM_THREADS=2\n" in files["merge.sbatch"]
    inherited = rendered(RunSpec.model_validate({"run_id": "x", "slurm": {"cpus_per_task": 16}}))["merge.sbatch"]
    assert "export OMP_NUM_THREADS=16\n" in inherited  # no merge_job.cpus_per_task: the array's
    merge_only = rendered(RunSpec.model_validate({"run_id": "x", "slurm": {"merge_job": {"cpus_per_task": 4}}}))
    assert "OMP_NUM_THREADS" not in merge_only["array.sbatch"]
    assert "export OMP_NUM_THREADS=4\n" in merge_only["merge.sbatch"]


def test_tensor_parallel_preset_and_gpu_split():
    spec = RunSpec.model_validate({"run_id": "tp", "models": {"agent": "qwen2.5-7b-instruct", "judge": "llama-3.1-8b-instruct"},
                                   "num_shards": 3,
                                   "slurm": {"gres": "gpu:a100:3", "judge_gpus": 1, "judge_per_shard": True}})
    plan = make_plan(spec, workdir=WORKDIR)
    assert plan.roles["agent"].endswith("presets/qwen2.5-7b-instruct-tp2.yaml")
    assert plan.roles["judge"] == "llama-3.1-8b-instruct"  # one judge GPU: the preset as is
    (data,) = plan.presets.values()
    assert data["tensor_parallel_size"] == 2 and data["name"] == "qwen2.5-7b-instruct"
    assert plan.shard_specs[2]["models"]["agent"] == plan.roles["agent"]
    assert plan.shard_specs[2]["shard"] == 2 and plan.shard_specs[2]["run_id"] == "2"
    assert plan.shard_specs[2]["out"] == str(plan.layout.shards) and plan.shard_specs[2]["slurm"] == {}
    script = render_array(plan).script
    assert 'LB_AGENT_GPUS=$(IFS=,; echo "${LB_GPUS[*]:0:2}")' in script
    assert 'LB_JUDGE_GPUS=$(IFS=,; echo "${LB_GPUS[*]:2:1}")' in script


# ---- refused values -------------------------------------------------------------------------

HOSTILE_SBATCH = [
    ("partition", "gpu;rm -rf ~"),
    ("account", "$(id)"),
    ("qos", "`id`"),
    ("constraint", "a100 b"),
    ("gres", "gpu:1\n#SBATCH --wrap=id"),
    ("job_name", "run'1"),
    ("log_dir", "/tmp/$(id)"),
    ("time", "1:00:00\nid"),
    ("mem", "32G; id"),
    ("signal", "USR1;id"),
]


@pytest.mark.parametrize("field,value", HOSTILE_SBATCH, ids=[f for f, _ in HOSTILE_SBATCH])
def test_hostile_sbatch_values_are_refused_naming_the_field(field, value):
    with pytest.raises(SlurmOptionsError, match=rf"field 'slurm\.{field}'"):
        parse_options({field: value}, "my.yaml")


@pytest.mark.parametrize("lines,match", [
    (["--comment=two words"], r"slurm\.extra_sbatch"),
    (["--mail-type=END\n--wrap=id"], r"slurm\.extra_sbatch"),
    (["-p gpu"], r"long option"),
    (["--array=0-99"], r"set by localbench"),
    (["--output=/tmp/x"], r"set by localbench"),
])
def test_extra_sbatch_lines_are_checked(lines, match):
    with pytest.raises(SlurmOptionsError, match=match):
        parse_options({"extra_sbatch": lines})


@pytest.mark.parametrize("field,value", [
    ("setup", ["module load x\nid"]),
    ("after_merge", ["localbench score {run}\rid"]),
    ("venv", "/opt/venv\n/evil"),
    ("scratch", "/scratch\0x"),
    ("env", {"A": "1\n2"}),
    ("env", {"A;id": "1"}),
    ("serve_command", "localbench serve {model}"),  # no {port}
])
def test_unsafe_body_values_are_refused(field, value):
    with pytest.raises(SlurmOptionsError, match=rf"slurm\.{field}"):
        parse_options({field: value})


def test_other_option_errors_name_the_file_and_field():
    with pytest.raises(SlurmOptionsError, match=r"^my\.yaml: field 'slurm\.judge_gpus'"):
        parse_options({"gres": "gpu:1", "judge_gpus": 1}, "my.yaml")
    with pytest.raises(SlurmOptionsError, match=r"slurm\.cpus_per_task"):
        parse_options({"cpus_per_task": 0})
    with pytest.raises(SlurmOptionsError, match=r"slurm\.nonsense"):
        parse_options({"nonsense": 1})


def test_unsafe_run_directory_needs_an_explicit_log_dir():
    spec = RunSpec.model_validate({"run_id": "r $(id)"})
    with pytest.raises(SlurmOptionsError, match=r"slurm\.log_dir"):
        make_plan(spec, workdir=WORKDIR)
    ok = spec.model_copy(update={"slurm": {"log_dir": "/tmp/logs"}})
    assert "RUN='/home/you/localbench/runs/r $(id)'" in render_array(make_plan(ok, workdir=WORKDIR)).script


def test_relative_log_dir_is_under_the_workdir(tmp_path, monkeypatch):
    """sbatch runs in the workdir, so --output=logs/... is a directory there: the plan stores it
    absolute, submit creates it there (not in the shell's current directory), and the scripts name it."""
    from localbench.slurm.submit import write_plan_files

    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    spec = RunSpec.model_validate({"run_id": "rel", "models": {"agent": "tiny-random"},
                                   "slurm": {"log_dir": "out/../logs"}})
    plan = make_plan(spec, workdir=work)
    assert plan.log_dir == str(work / "logs")
    assert f"#SBATCH --output={work}/logs/%x-%A_%a.out\n" in render_array(plan).script
    assert f"#SBATCH --output={work}/logs/%x-%j.out\n" in render_merge(plan).script
    write_plan_files(plan)
    assert (work / "logs").is_dir() and not (elsewhere / "logs").exists()
    assert make_plan(spec, workdir=WORKDIR).log_dir == "/home/you/localbench/logs"  # goldens stay stable
    absolute = spec.model_copy(update={"slurm": {"log_dir": "/var/log/lb"}})
    assert make_plan(absolute, workdir=work).log_dir == "/var/log/lb"
    # a relative log_dir under a workdir that cannot go on an #SBATCH line is refused, naming the field
    bad = tmp_path / "my work"
    with pytest.raises(SlurmOptionsError, match=r"field 'slurm\.log_dir': 'logs' is relative"):
        make_plan(spec.model_copy(update={"slurm": {"log_dir": "logs"}}), workdir=bad)


def test_templates_cannot_interpolate_unquoted_values():
    env = _env()
    with pytest.raises(UnsafeValue, match="unquoted value"):
        env.from_string("echo {{ v }}").render(v="$(id)")
    assert env.from_string("echo {{ v }}").render(v=quote("$(id)")) == "echo '$(id)'"


# ---- quoting proven by bash -----------------------------------------------------------------

def _bash_value(word: str, env: dict[str, str] | None = None) -> str:
    r = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"], **(env or {})})
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("value", ["plain", "two words", "it's", 'say "hi"', "$(touch pwned)", "`touch pwned`",
                                   "a;b|c&d", "${HOME}", "back\\slash", "new\nline", "", "*", "~/x"])
def test_quote_is_literal_in_bash(value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _bash_value(quote(value)) == value
    assert not (tmp_path / "pwned").exists()


def test_quote_with_vars_expands_only_variables(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {"SCRATCH": "/s c/ratch", "USER": "me"}
    assert _bash_value(quote_with_vars("$SCRATCH/lb/${USER}x"), env) == "/s c/ratch/lb/mex"
    hostile = "$SCRATCH/$(touch pwned)/`touch pwned`/'q\"/;touch pwned"
    assert _bash_value(quote_with_vars(hostile), env) == "/s c/ratch/$(touch pwned)/`touch pwned`/'q\"/;touch pwned"
    assert not (tmp_path / "pwned").exists()


def _stub(bin_dir: Path, name: str) -> None:
    """A stand-in for a command the scripts call: records argv, cwd, env and signals it gets.

    As `localbench` it also plays the task's helpers: `slurm exec` execs the rest, `slurm free-port`
    prints a port, `serve` runs until SIGINT/SIGTERM, and `slurm wait-url` returns once the stub
    server on that URL's port has its signal handlers in place (as the real one waits for the
    server to answer), so a server is never signalled before it can record it.
    """
    bin_dir.mkdir(exist_ok=True)
    f = bin_dir / name
    f.write_text(f"""#!{sys.executable}
import json, os, signal, sys, time
argv = sys.argv[1:]
if argv[:2] == ["slurm", "exec"]:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.execvp(argv[2], argv[2:])
if argv[:2] == ["slurm", "free-port"]:  # a new port on each call
    ports = os.environ["LB_STUB_LOG"] + ".ports"
    n = len(open(ports).read()) if os.path.exists(ports) else 0
    open(ports, "a").write("x")
    print(40001 + n)
def log(r):
    with open(os.environ["LB_STUB_LOG"], "a") as fh:
        fh.write(json.dumps(r) + "\\n")
def on_signal(sig, frame):
    log({{"cmd": {name!r}, "argv": argv, "signal": sig}})
    sys.exit(143)
signal.signal(signal.SIGTERM, on_signal)
if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
    signal.signal(signal.SIGINT, on_signal)
# the first record is written once signals are handled, so a test that waits for it may signal
log({{"cmd": {name!r}, "argv": argv, "cwd": os.getcwd(),
     "env": {{k: os.environ.get(k) for k in ("HF_HOME", "VLLM_CACHE_ROOT", "LOCALBENCH_CACHE", "HF_HUB_OFFLINE",
                                             "LB_HOSTILE", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "LB_PORT")}}}})
ready = os.environ["LB_STUB_LOG"] + ".ready."
if argv[:1] == ["serve"]:
    open(ready + argv[-1], "w").close()
if argv[:2] == ["slurm", "wait-url"]:
    port = argv[2].split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[-1]
    deadline = time.monotonic() + 30
    while not os.path.exists(ready + port) and time.monotonic() < deadline:
        time.sleep(0.05)
if {name!r} == "localbench" and (argv[:1] == ["serve"] or os.environ.get("LB_STUB_SLEEP")):
    time.sleep(float(os.environ.get("LB_STUB_SLEEP", "60")))
sys.exit(int(os.environ.get("LB_STUB_EXIT", "0")))
""")
    f.chmod(0o755)


def _hostile_spec(tmp_path: Path) -> RunSpec:
    """Values that would create files named pwned* if any part of them ever ran as shell code."""
    payload = "$(touch pwned1)`touch pwned2`;touch pwned3 'q\" \\"
    workdir = tmp_path / "work $(touch pwned4) `touch pwned5`;'"
    workdir.mkdir()
    return RunSpec.model_validate({
        "run_id": "run $(touch pwned6)", "out": str(tmp_path / "out;`touch pwned7`"),
        "slurm": {"log_dir": str(tmp_path / "logs"), "scratch": f"/scratch/{payload}",
                  "hf_home": f"$HOME/hf {payload}", "env": {"LB_HOSTILE": payload}, "cpus_per_task": 3,
                  "workdir": str(workdir),
                  "after_merge": ["localbench judge {run}"]},
    })


def _run_script(script: str, tmp_path: Path, extra_env: dict[str, str]) -> subprocess.Popen:
    f = tmp_path / "job.sh"
    f.write_text(script)
    env = {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "HOME": str(tmp_path / "home"),
           "LB_STUB_LOG": str(tmp_path / "stub.log"), "SLURM_JOB_ID": "77", **extra_env}
    return subprocess.Popen(["bash", str(f)], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _stub_log(tmp_path: Path) -> list[dict]:
    p = tmp_path / "stub.log"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def test_hostile_values_reach_the_program_literally(tmp_path):
    """Run the rendered scripts with bash (localbench stubbed): every value arrives as written."""
    spec = _hostile_spec(tmp_path)
    _stub(tmp_path / "bin", "localbench")
    plan = make_plan(spec, workdir=tmp_path)
    payload = spec.slurm["env"]["LB_HOSTILE"]

    p = _run_script(render_array(plan).script, tmp_path, {"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_JOB_ID": "70"})
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, out
    (call,) = [c for c in _stub_log(tmp_path) if c["argv"][0] != "slurm"]
    assert call["argv"] == ["simulate", "--spec", str(plan.layout.shard_spec(2))]
    assert call["cwd"] == spec.slurm["workdir"]
    assert call["env"]["LB_HOSTILE"] == payload
    assert call["env"]["HF_HOME"] == f"{tmp_path / 'home'}/hf {payload}"  # $HOME expanded, nothing else
    assert call["env"]["VLLM_CACHE_ROOT"] == f"/scratch/{payload}/vllm"
    assert call["env"]["HF_HUB_OFFLINE"] == "1" and call["env"]["OMP_NUM_THREADS"] == "3"
    state = json.loads(plan.layout.state_file(2).read_text())
    assert state["exit_code"] == 0 and state["job_id"] == "77" and state["shard"] == 2

    (tmp_path / "stub.log").unlink()
    p = _run_script(render_merge(plan).script, tmp_path, {})
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, out
    calls = _stub_log(tmp_path)
    assert [c["argv"] for c in calls] == [["slurm", "merge", str(plan.layout.run)], ["judge", str(plan.layout.run)]]
    assert list(tmp_path.rglob("pwned*")) == []  # no payload ever ran


def test_failing_step_ends_the_task_with_its_status(tmp_path):
    _stub(tmp_path / "bin", "localbench")
    plan = make_plan(RunSpec.model_validate({"run_id": "f", "out": str(tmp_path / "runs")}), workdir=tmp_path)
    p = _run_script(render_array(plan).script, tmp_path, {"SLURM_ARRAY_TASK_ID": "0", "LB_STUB_EXIT": "3"})
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 3, out
    assert "step simulate failed with exit status 3" in out
    assert json.loads(plan.layout.state_file(0).read_text())["exit_code"] == 3


@pytest.mark.parametrize("sig,requeues", [(signal.SIGTERM, False), (signal.SIGUSR1, True)])
def test_signal_is_forwarded_and_the_task_stops(tmp_path, sig, requeues):
    """SIGTERM (scancel, preemption) and the --signal warning reach the running step at once."""
    _stub(tmp_path / "bin", "localbench")
    _stub(tmp_path / "bin", "scontrol")
    plan = make_plan(RunSpec.model_validate({"run_id": "s", "out": str(tmp_path / "runs")}), workdir=tmp_path)
    p = _run_script(render_array(plan).script, tmp_path, {"SLURM_ARRAY_TASK_ID": "1", "LB_STUB_SLEEP": "60"})
    deadline = time.monotonic() + 30
    while not _stub_log(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _stub_log(tmp_path), "the step never started"
    t0 = time.monotonic()
    os.kill(p.pid, sig)  # Slurm signals the batch shell (B: for --signal)
    out, _ = p.communicate(timeout=30)
    assert time.monotonic() - t0 < 10, "the task did not stop promptly"
    assert p.returncode == 143, out
    calls = _stub_log(tmp_path)
    assert any(c.get("signal") == signal.SIGTERM and c["argv"][0] == "simulate" for c in calls)  # forwarded
    requeued = [c for c in calls if c.get("cmd") == "scontrol" and "argv" in c]
    assert ([c["argv"] for c in requeued] == [["requeue", "77"]]) == requeues
    state = json.loads(plan.layout.state_file(1).read_text())
    assert state["exit_code"] == 143 and state["signal"] == sig.name.removeprefix("SIG")


def test_serve_mode_starts_waits_for_and_stops_one_server_per_gpu_group(tmp_path):
    """Agent and judge servers on their own GPUs; each step talks to its server; both stopped."""
    _stub(tmp_path / "bin", "localbench")
    spec = RunSpec.model_validate({
        "run_id": "srv", "out": str(tmp_path / "runs"), "models": {"agent": "tiny-random", "judge": "smollm2-135m"},
        "slurm": {"gres": "gpu:2", "judge_gpus": 1, "serve": True, "judge_per_shard": True}})
    plan = make_plan(spec, workdir=tmp_path)
    p = _run_script(render_array(plan).script, tmp_path, {"SLURM_ARRAY_TASK_ID": "0", "CUDA_VISIBLE_DEVICES": "4,6"})
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, out
    calls = _stub_log(tmp_path)
    started = {c["argv"][1]: c for c in calls if c["argv"][0] == "serve" and "signal" not in c}
    assert started["tiny-random"]["env"]["CUDA_VISIBLE_DEVICES"] == "4"
    assert started["smollm2-135m"]["env"]["CUDA_VISIBLE_DEVICES"] == "6"
    ports = {started[m]["env"]["LB_PORT"] for m in started}
    assert len(ports) == 2 and all(started[m]["argv"][-1] == started[m]["env"]["LB_PORT"] for m in started)
    steps = {c["argv"][0]: c for c in calls if c["argv"][0] in ("simulate", "judge")}
    agent_url = f"http://127.0.0.1:{started['tiny-random']['env']['LB_PORT']}/v1"
    judge_url = f"http://127.0.0.1:{started['smollm2-135m']['env']['LB_PORT']}/v1"
    assert steps["simulate"]["argv"][-2:] == ["--base-url", agent_url]
    assert steps["simulate"]["env"]["CUDA_VISIBLE_DEVICES"] == "4"
    assert steps["judge"]["argv"][-2:] == ["--base-url", judge_url] and steps["judge"]["env"]["CUDA_VISIBLE_DEVICES"] == "6"
    waited = [c["argv"][2] for c in calls if c["argv"][:2] == ["slurm", "wait-url"]]
    assert sorted(waited) == sorted([agent_url + "/models", judge_url + "/models"])
    stopped = [c for c in calls if c["argv"][0] == "serve" and c.get("signal") == signal.SIGINT]
    assert len(stopped) == 2  # both servers got Ctrl-C, so they shut their engines down


def test_serve_mode_on_shared_gpus_stops_the_agent_server_before_the_judge_starts(tmp_path):
    _stub(tmp_path / "bin", "localbench")
    spec = RunSpec.model_validate({
        "run_id": "srv1", "out": str(tmp_path / "runs"), "models": {"agent": "tiny-random", "judge": "smollm2-135m"},
        "slurm": {"gres": "gpu:1", "serve": True, "judge_per_shard": True}})
    p = _run_script(render_array(make_plan(spec, workdir=tmp_path)).script, tmp_path,
                    {"SLURM_ARRAY_TASK_ID": "0", "CUDA_VISIBLE_DEVICES": "3"})
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, out
    events = [(c["argv"][0], c["argv"][1] if c["argv"][0] == "serve" else None, "signal" in c)
              for c in _stub_log(tmp_path) if c["argv"][0] in ("serve", "simulate", "judge")]
    assert events == [("serve", "tiny-random", False), ("simulate", None, False), ("serve", "tiny-random", True),
                      ("serve", "smollm2-135m", False), ("judge", None, False), ("serve", "smollm2-135m", True)]
