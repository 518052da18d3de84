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


def test_there_are_nine_examples():
    assert {p.stem for p in EXAMPLE_SPECS} == {"one-gpu", "multi-gpu-tp", "split-agent-judge", "cpu-test-queue",
                                               "multi-node-judge", "agentleak-one-gpu", "agentleak-multi-node",
                                               "sopri-one-gpu", "sopri-multi-node"}


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
    # each shard on 2 nodes x 4 GPUs: Ray across them, the agent's vLLM server on the head, then the judge's
    "multi-node-array": (dict(models={"agent": "qwen2.5-7b-instruct"},
                              slurm={"nodes": 2, "gres": "gpu:4", "serve": True, "judge_per_shard": True,
                                     "time": "08:00:00"}), None),
    # a GPU array whose merge job unsets what it would inherit (null) and caps the requeues at 1
    "merge-own-resources": (dict(models={"agent": "qwen2.5-7b-instruct"},
                                 slurm={"gres": "gpu:1", "partition": "gpu", "mem": "64G", "cpus_per_task": 8,
                                        "extra_sbatch": ["--exclusive", "--mail-type=END"], "max_requeues": 1,
                                        "merge_job": {"partition": None, "mem": None, "time": "00:20:00",
                                                      "extra_sbatch": None}}), None),
    # one node of 8 GPUs: the 70B preset (TP 4) as two TP-4 copies, served; the server waits as long as the task
    "tp-dp-one-node": (dict(models={"agent": "llama-3.3-70b-instruct"},
                            slurm={"gres": "gpu:h100:8", "serve": True, "serve_timeout": 1500, "judge_per_shard": True,
                                   "cpus_per_task": 64}), None),
    # 7B on 4 GPUs: four data-parallel copies, not one model split four ways
    "dp-7b": (dict(models={"agent": "qwen2.5-7b-instruct"}, slurm={"gres": "gpu:4", "judge_per_shard": True}), None),
    # 2 nodes x 4 GPUs with CPUs per task: the Ray srun steps get --cpus-per-task, ray-node --num-cpus
    "multi-node-cpus": (dict(models={"agent": "llama-3.3-70b-instruct"},
                             slurm={"nodes": 2, "gres": "gpu:4", "cpus_per_task": 16, "serve": True,
                                    "judge_per_shard": True, "time": "08:00:00"}), None),
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
    # no merge_job.cpus_per_task: the array's, at most 4 for a merge job that holds no GPU
    assert "export OMP_NUM_THREADS=4\n" in inherited and "#SBATCH --cpus-per-task=4\n" in inherited
    merge_only = rendered(RunSpec.model_validate({"run_id": "x", "slurm": {"merge_job": {"cpus_per_task": 4}}}))
    assert "OMP_NUM_THREADS" not in merge_only["array.sbatch"]
    assert "export OMP_NUM_THREADS=4\n" in merge_only["merge.sbatch"]


def test_tensor_parallel_preset_and_gpu_split():
    spec = RunSpec.model_validate({"run_id": "tp", "models": {"agent": "qwen2.5-7b-instruct", "judge": "llama-3.1-8b-instruct"},
                                   "num_shards": 3,
                                   "slurm": {"gres": "gpu:a100:3", "judge_gpus": 1, "judge_per_shard": True}})
    plan = make_plan(spec, workdir=WORKDIR)
    # a 7B model on 2 GPUs: two data-parallel copies (more in flight than one copy split in two)
    assert plan.roles["agent"].endswith("presets/qwen2.5-7b-instruct-dp2.yaml")
    assert plan.roles["judge"] == "llama-3.1-8b-instruct"  # one judge GPU: the preset as is
    (data,) = plan.presets.values()
    assert (data["tensor_parallel_size"], data["pipeline_parallel_size"], data["data_parallel_size"]) == (1, 1, 2)
    assert data["name"] == "qwen2.5-7b-instruct"
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
if argv[:2] == ["slurm", "node-ip"]:
    print("10.1.2.3")
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
                                             "LB_HOSTILE", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "LB_PORT",
                                             "RAY_ADDRESS", "LOCALBENCH_SERVER_LOGS")}}}})
ready = os.environ["LB_STUB_LOG"] + ".ready."
if argv[:1] == ["serve"]:
    open(ready + argv[argv.index("--port") + 1], "w").close()
if argv[:2] == ["slurm", "wait-url"]:
    port = argv[2].split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[-1]
    deadline = time.monotonic() + 30
    while not os.path.exists(ready + port) and time.monotonic() < deadline:
        time.sleep(0.05)
if {name!r} == "localbench" and (argv[:1] == ["serve"] or os.environ.get("LB_STUB_SLEEP")):
    time.sleep(float(os.environ.get("LB_STUB_SLEEP", "60")))
if {name!r} == "srun":  # a Ray node: runs until the task stops it
    time.sleep(60)
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
    assert [c["argv"] for c in calls] == [["slurm", "merge", str(plan.layout.run)],
                                          ["slurm", "usage", str(plan.layout.run), "--record"],
                                          ["judge", str(plan.layout.run)]]
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
    p = _run_script(render_array(plan).script, tmp_path, {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_JOB_ID": "70",
                                                          "LB_STUB_SLEEP": "60"})
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
    # task 1 of array 70 (whose own job id is 77) requeues itself alone, not the array 70 / job 77
    assert ([c["argv"] for c in requeued] == [["requeue", "70_1"]]) == requeues
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
    assert len(ports) == 2 and all(started[m]["argv"][started[m]["argv"].index("--port") + 1] == started[m]["env"]["LB_PORT"]
                                   for m in started)
    # the server waits for its engine as long as the task waits for the server (slurm.serve_timeout)
    assert all(started[m]["argv"][-2:] == ["--startup-timeout", "900"] for m in started)
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


def test_a_judge_that_is_the_agents_model_judges_through_the_agents_server(tmp_path):
    """One preset for agent and judge: the warm server judges too; no second cold start of the
    same model (a 70B one takes many minutes)."""
    _stub(tmp_path / "bin", "localbench")
    spec = RunSpec.model_validate({
        "run_id": "srv2", "out": str(tmp_path / "runs"), "models": {"agent": "tiny-random"},
        "slurm": {"gres": "gpu:1", "serve": True, "judge_per_shard": True}})
    p = _run_script(render_array(make_plan(spec, workdir=tmp_path)).script, tmp_path,
                    {"SLURM_ARRAY_TASK_ID": "0", "CUDA_VISIBLE_DEVICES": "3"})
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, out
    calls = [c for c in _stub_log(tmp_path) if c["argv"][0] in ("serve", "simulate", "judge")]
    events = [(c["argv"][0], c["argv"][1] if c["argv"][0] == "serve" else None, "signal" in c) for c in calls]
    assert events == [("serve", "tiny-random", False), ("simulate", None, False), ("judge", None, False),
                      ("serve", "tiny-random", True)]
    (judge,) = [c["argv"] for c in calls if c["argv"][0] == "judge"]
    (simulate,) = [c["argv"] for c in calls if c["argv"][0] == "simulate"]
    assert judge[judge.index("--base-url") + 1] == simulate[simulate.index("--base-url") + 1]


def test_no_example_loads_a_cuda_module():
    """PyTorch's and vLLM's wheels bring their CUDA runtime; a site CUDA module (cuda/12.4 for a
    CUDA 13 torch) can only shadow it."""
    for example in EXAMPLES.glob("*.yaml"):
        assert "cuda/" not in example.read_text(), example.name
    for rendered in EXAMPLES.glob("*/*.sbatch"):
        assert "module load cuda" not in rendered.read_text(), rendered


# ---- issue 18: requeue target and cap, the merge job's own resources, multi-node, modules -------

def test_the_self_requeue_cap_fails_the_task_with_a_clear_line(tmp_path, monkeypatch):
    """max_requeues=1: the first warning requeues the task; the second warning in the same job
    does not, and the task ends FAILED-to-be (exit 143) with the reason in its log and state file."""
    _stub(tmp_path / "bin", "localbench")
    _stub(tmp_path / "bin", "scontrol")
    plan = make_plan(RunSpec.model_validate({"run_id": "cap", "out": str(tmp_path / "runs"),
                                             "slurm": {"max_requeues": 1}}), workdir=tmp_path)
    env = {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_JOB_ID": "70", "LB_STUB_SLEEP": "60"}
    outs = []
    for restart in ("0", "1"):
        (tmp_path / "stub.log").unlink(missing_ok=True)
        p = _run_script(render_array(plan).script, tmp_path, {**env, "SLURM_RESTART_COUNT": restart})
        deadline = time.monotonic() + 30
        while not any(c["argv"][0] == "simulate" for c in _stub_log(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(p.pid, signal.SIGUSR1)
        out, _ = p.communicate(timeout=30)
        assert p.returncode == 143, out
        outs.append((out, [c["argv"] for c in _stub_log(tmp_path) if c.get("cmd") == "scontrol" and "argv" in c]))
    assert outs[0][1] == [["requeue", "70_0"]] and "self-requeue 1 of at most 1" in outs[0][0]
    assert outs[1][1] == [] and "error: the time limit came again after 1 self-requeue(s)" in outs[1][0]
    state = json.loads(plan.layout.state_file(0).read_text())
    assert state["gave_up"] == "max_requeues" and state["requeues"] == 1 and state["job"] == "70_0"
    runs = [json.loads(x) for x in (plan.layout.state / "shard-0.runs.jsonl").read_text().splitlines()]
    assert [r["restart"] for r in runs] == [0, 1] and all(r["end"] >= r["start"] for r in runs)
    # status reads the reason from the state file once the scheduler has forgotten the task
    from localbench.slurm.layout import SubmissionRecord, JobSubmission
    from localbench.slurm.status import run_status

    plan.layout.write_record(SubmissionRecord(run_dir=str(plan.layout.run), num_shards=1, job_name="lb-cap",
                                              log_dir=str(tmp_path), workdir=str(tmp_path),
                                              submissions=[JobSubmission(array_job="70", shards=[0],
                                                                         array_script="x")]))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")  # the stub scontrol: it knows no job
    st = run_status(plan.layout.run)
    assert st.shards[0].state == "FAILED" and "stopped at the time limit after 1 self-requeue(s)" in st.shards[0].why


def test_a_warning_as_early_as_the_time_limit_is_refused():
    with pytest.raises(SlurmOptionsError, match=r"^my\.yaml: field 'slurm\.signal': the warning USR1@120 comes 120 s "
                                                r"before the time limit, but slurm\.time '2' is 120 s"):
        make_plan(RunSpec.model_validate({"run_id": "t", "slurm": {"time": "2"}}), "my.yaml", workdir=WORKDIR)
    with pytest.raises(SlurmOptionsError, match=r"slurm\.merge_job\.time '00:01:00' is 60 s"):
        make_plan(RunSpec.model_validate({"run_id": "t", "slurm": {"time": "1:00:00", "signal": "USR1@90",
                                                                   "merge_job": {"time": "00:01:00"}}}),
                  workdir=WORKDIR)
    # a later warning, no warning, or Slurm's default of 60 s against 2 minutes: fine
    for slurm in ({"time": "2", "signal": "USR1@30"}, {"time": "1", "signal": None}, {"time": "2", "signal": "USR1"}):
        make_plan(RunSpec.model_validate({"run_id": "t", "slurm": slurm}), workdir=WORKDIR)


def test_the_merge_job_has_its_own_resources():
    def merge(slurm: dict, models: dict | None = None) -> str:
        spec = RunSpec.model_validate({"run_id": "m", "models": models or {"agent": "qwen2.5-7b-instruct"},
                                       "slurm": slurm})
        return rendered(spec)["merge.sbatch"]

    gpu_array = {"partition": "gpu-large", "qos": "normal", "time": "1-00:00:00", "cpus_per_task": 32, "mem": "256G",
                 "gres": "gpu:a100:4", "constraint": "a100&nvlink", "extra_sbatch": ["--exclusive", "--mail-type=END"]}
    # the judge (the agent's preset, on a GPU) runs in the merge job: it takes the array's GPU resources
    m = merge(gpu_array)
    assert "--gres=gpu:a100:4" in m and "--exclusive" in m and "--mem=256G" in m and "--partition=gpu-large" in m
    # judged per shard: a CPU-only merge that merges, scores and reports, with modest defaults
    m = merge({**gpu_array, "judge_per_shard": True})
    for gone in ("--gres", "--exclusive", "--partition", "--qos", "--constraint"):
        assert gone not in m, gone
    assert "--mem=16G" in m and "--cpus-per-task=4" in m and "--time=02:00:00" in m and "--mail-type=END" in m
    # a judge that needs no GPU (the packaged small model): no GPU for the merge job either
    m = merge(gpu_array, {"agent": "qwen2.5-7b-instruct", "judge": "smollm2-135m"})
    assert "--gres" not in m and "--time=1-00:00:00" in m  # it judges: the array's time
    # every option can be unset for it with null, extra_sbatch included; given values win
    m = merge({**gpu_array, "merge_job": {"partition": None, "time": None, "gres": None, "mem": None,
                                          "cpus_per_task": None, "constraint": None, "qos": None,
                                          "extra_sbatch": None, "account": "other"}})
    lines = [x for x in m.splitlines() if x.startswith("#SBATCH")]
    assert [x.split("=")[0] for x in lines] == ["#SBATCH --job-name", "#SBATCH --kill-on-invalid-dep", "#SBATCH --output",
                                                "#SBATCH --open-mode", "#SBATCH --requeue", "#SBATCH --signal",
                                                "#SBATCH --account"], lines
    assert "export OMP_NUM_THREADS" not in m
    m = merge({**gpu_array, "merge_job": {"extra_sbatch": ["--mail-type=FAIL"]}})
    assert "--mail-type=FAIL" in m and "--mail-type=END" not in m and "--exclusive" not in m
    with pytest.raises(SlurmOptionsError, match=r"field 'slurm\.merge_job\.extra_sbatch'"):
        parse_options({"merge_job": {"extra_sbatch": ["--dependency=afterok:1"]}})


def test_multi_node_plans_serve_across_the_nodes_and_refuse_what_cannot_work():
    spec = {"run_id": "mn", "models": {"agent": "qwen2.5-7b-instruct"}}
    plan = make_plan(RunSpec.model_validate({**spec, "slurm": {"nodes": 2, "gres": "gpu:4", "serve": True}}),
                     workdir=WORKDIR)
    (data,) = plan.presets.values()  # a preset without parallel sizes: tp = GPUs per node, pp = nodes
    assert (data["tensor_parallel_size"], data["pipeline_parallel_size"]) == (4, 2)
    script = render_array(plan).script
    assert "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n" in script and "lb_ray_up\nlb_serve agent - " in script
    # the 70B preset needs TP 4: on 2 x 4 GPUs TP 4 x PP 2 (never TP 8 x PP 2 = 16), on 2 x 2 TP 2 x PP 2,
    # refused on 2 x 1
    big = {"run_id": "mn", "models": {"agent": "qwen2.5-7b-instruct", "judge": "llama-3.3-70b-instruct"}}
    plan = make_plan(RunSpec.model_validate({**big, "slurm": {"merge_job": {"nodes": 2, "gres": "gpu:h100:4"}}}),
                     workdir=WORKDIR)
    assert plan.merge_judge_model.endswith("llama-3.3-70b-instruct-tp4-pp2.yaml") and plan.merge.gpus == 4
    plan = make_plan(RunSpec.model_validate({**big, "slurm": {"merge_job": {"nodes": 2, "gres": "gpu:2"}}}),
                     workdir=WORKDIR)
    assert plan.merge_judge_model.endswith("llama-3.3-70b-instruct-tp2-pp2.yaml")
    with pytest.raises(SlurmOptionsError, match=r"field 'slurm\.merge_job\.nodes': preset 'llama-3\.3-70b-instruct' "
                                                r"needs 4 GPUs .* the job has 2 node\(s\) x 1 GPUs = 2"):
        make_plan(RunSpec.model_validate({**big, "slurm": {"merge_job": {"nodes": 2, "gres": "gpu:1"}}}),
                  workdir=WORKDIR)
    with pytest.raises(SlurmOptionsError, match=r"field 'slurm\.nodes': .* set slurm\.serve: true"):
        make_plan(RunSpec.model_validate({**spec, "slurm": {"nodes": 2, "gres": "gpu:4"}}), workdir=WORKDIR)
    with pytest.raises(SlurmOptionsError, match=r"field 'slurm\.nodes': .*set slurm\.gres"):
        parse_options({"nodes": 2, "serve": True})
    with pytest.raises(SlurmOptionsError, match=r"field 'slurm\.merge_job\.nodes': .*set slurm\.merge_job\.gres"):
        make_plan(RunSpec.model_validate({**big, "slurm": {"merge_job": {"nodes": 2}}}), workdir=WORKDIR)
    with pytest.raises(SlurmOptionsError, match=r"field 'slurm\.merge_job\.nodes': the merge job runs no judge step"):
        make_plan(RunSpec.model_validate({**big, "slurm": {"judge_per_shard": True, "gres": "gpu:1",
                                                           "merge_job": {"nodes": 2, "gres": "gpu:4"}}}),
                  workdir=WORKDIR)


def test_a_multi_node_merge_job_starts_ray_serves_the_judge_and_tears_it_all_down(tmp_path):
    """Run the rendered merge job under bash (localbench and srun stubbed): Ray head on this node,
    workers on the others, wait for all nodes and GPUs, the judge's server with RAY_ADDRESS, the
    judge step through it, then the server (SIGINT) and the Ray nodes (SIGTERM) stopped before scoring."""
    _stub(tmp_path / "bin", "localbench")
    _stub(tmp_path / "bin", "srun")
    spec = RunSpec.model_validate({"run_id": "mnj", "out": str(tmp_path / "runs"),
                                   "models": {"agent": "qwen2.5-7b-instruct", "judge": "llama-3.3-70b-instruct"},
                                   "slurm": {"merge_job": {"nodes": 2, "gres": "gpu:h100:4"}}})
    plan = make_plan(spec, workdir=tmp_path)
    p = _run_script(render_merge(plan).script, tmp_path, {"SLURMD_NODENAME": "node1", "SLURM_JOB_NUM_NODES": "2"})
    out, _ = p.communicate(timeout=180)
    assert p.returncode == 0, out
    calls = _stub_log(tmp_path)
    seq = [(c["cmd"], "srun" if c["cmd"] == "srun" else " ".join(c["argv"][:2]), "signal" in c) for c in calls
           if not (c["cmd"] == "localbench" and c["argv"][:2] in (["slurm", "free-port"], ["slurm", "node-ip"],
                                                                  ["slurm", "usage"], ["slurm", "exec"]))]
    srun_head = next(c for c in calls if c["cmd"] == "srun" and "--head" in c["argv"] and "signal" not in c)
    srun_workers = next(c for c in calls if c["cmd"] == "srun" and "--address" in c["argv"] and "signal" not in c)
    assert "--nodelist=node1" in srun_head["argv"] and "--gres=gpu:h100:4" in srun_head["argv"]
    assert "--exclude=node1" in srun_workers["argv"] and "--num-gpus" in srun_workers["argv"]
    address = srun_workers["argv"][srun_workers["argv"].index("--address") + 1]
    assert address.startswith("10.1.2.3:")
    waited = next(c for c in calls if c["argv"][:2] == ["slurm", "wait-ray"])
    assert waited["argv"][2:] == [address, "--nodes", "2", "--gpus", "8", "--timeout", "600"]
    server = next(c for c in calls if c["argv"][:1] == ["serve"] and "signal" not in c)
    assert server["argv"][1].endswith("llama-3.3-70b-instruct-tp4-pp2.yaml") and server["env"]["RAY_ADDRESS"] == address
    assert server["env"]["CUDA_VISIBLE_DEVICES"] is None  # the server sees every GPU of its node
    assert server["env"]["LOCALBENCH_SERVER_LOGS"] == str(plan.layout.run / "slurm" / "servers")
    judge = next(c for c in calls if c["argv"][:1] == ["judge"])
    assert judge["argv"][-3:] == ["openai", "--base-url", f"http://127.0.0.1:{server['env']['LB_PORT']}/v1"]
    order = [x[1] for x in seq if not x[2]]
    # the two sruns (Ray's head and workers) run in the background, so when their fakes log is a race:
    # only the foreground steps have an order
    assert order.count("srun") == 2
    assert order.index("slurm merge") < order.index("slurm wait-ray") < order.index("serve " +
           server["argv"][1]) < order.index("judge " + str(plan.layout.run)) < order.index("score " +
           str(plan.layout.run)), order
    stops = [(c["cmd"], c["signal"]) for c in calls if "signal" in c]
    assert ("localbench", signal.SIGINT) in stops and stops.count(("srun", signal.SIGTERM)) == 2, stops
    last_stop = max(i for i, c in enumerate(calls) if "signal" in c)
    assert last_stop < next(i for i, c in enumerate(calls) if c["argv"][:1] == ["score"])  # torn down before scoring
    state = json.loads(plan.layout.merge_state_file.read_text())
    assert state["exit_code"] == 0 and state["task"] == "merge"
    runs = json.loads((plan.layout.state / "merge.runs.jsonl").read_text().splitlines()[-1])
    assert runs["gpus"] == 8 and runs["nodes"] == 2


def test_module_lines_work_in_a_non_login_shell(tmp_path):
    """`module` is a shell function defined by login shells: the script sources the modules init
    (or your slurm.setup does), and without one it stops with a clear line instead of failing later."""
    _stub(tmp_path / "bin", "localbench")
    spec = {"run_id": "mod", "out": str(tmp_path / "runs"), "slurm": {"modules": ["cuda/12.4", "gcc/12"]}}
    plan = make_plan(RunSpec.model_validate(spec), workdir=tmp_path)
    script = render_array(plan).script
    assert script.index("type module") < script.index("module load cuda/12.4") < script.index("module load gcc/12")
    p = _run_script(script, tmp_path, {"SLURM_ARRAY_TASK_ID": "0"})
    out, _ = p.communicate(timeout=60)
    if "module load" not in out and p.returncode == 0:
        pytest.skip("this machine has a modules init file: the no-modules case cannot be shown here")
    assert p.returncode == 1 and "error: 'module' is not defined in this non-login batch shell" in out, out
    assert _stub_log(tmp_path) == []  # nothing ran without its environment
    init = tmp_path / "modules-init.sh"
    init.write_text(f'module() {{ echo "$@" >> {tmp_path}/modules.log; }}\n')
    spec["slurm"]["setup"] = [f"source {init}"]  # the setup lines come first, so they can define it
    plan = make_plan(RunSpec.model_validate(spec), workdir=tmp_path)
    p = _run_script(render_array(plan).script, tmp_path, {"SLURM_ARRAY_TASK_ID": "0"})
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, out
    assert (tmp_path / "modules.log").read_text().splitlines() == ["load cuda/12.4", "load gcc/12"]


def test_vllm_server_logs_default_to_the_directory_the_task_names(tmp_path, monkeypatch):
    from localbench.serving.server import VLLMServer

    monkeypatch.setenv("LOCALBENCH_SERVER_LOGS", str(tmp_path / "run" / "slurm" / "servers"))
    s = VLLMServer("tiny-random", port=12345, on_cpu=True)
    assert s.log_path.parent == tmp_path / "run" / "slurm" / "servers" and s.log_path.name.endswith("-12345.log")
    monkeypatch.delenv("LOCALBENCH_SERVER_LOGS")
    monkeypatch.setenv("LOCALBENCH_CACHE", str(tmp_path / "cache"))
    assert VLLMServer("tiny-random", port=12345, on_cpu=True).log_path.parent == tmp_path / "cache" / "servers"


def test_gpu_hours_from_the_tasks_timers_and_sacct(tmp_path):
    from localbench.slurm.layout import JobSubmission, RunLayout, SubmissionRecord
    from localbench.slurm.usage import parse_sacct_usage, summarize

    lay = RunLayout(tmp_path / "run")
    lay.write_record(SubmissionRecord(run_dir=str(lay.run), num_shards=2, job_name="x", log_dir="l", workdir="w",
                                      submissions=[JobSubmission(array_job="5", merge_job="6", shards=[0, 1])]))
    lay.state.mkdir(parents=True)
    (lay.state / "shard-0.runs.jsonl").write_text(
        '{"task": "shard-0", "start": 0, "end": 1800, "gpus": 2}\n{"task": "shard-0", "start": 2000, "end": 3800, '
        '"gpus": 2}\n{"task": "shard-0", "sta')  # a requeued task: two runs, and a line cut by a kill
    (lay.state / "shard-1.runs.jsonl").write_text('{"task": "shard-1", "start": 0, "end": 3600, "gpus": 2}\n')
    (lay.state / "merge.running").write_text('{"task": "merge", "start": 3600, "gpus": 8}\n')
    u = summarize(lay.run, now=3600 + 900, with_sacct=False)
    assert (u["gpu_hours_shards"], u["gpu_hours_merge"], u["gpu_hours"]) == (4.0, 2.0, 6.0)
    assert u["task_runs"] == 3 and u["in_progress"] == ["merge"] and u["task_hours"] == 2.25
    acct = "5_0|1800|billing=2,cpu=8,gres/gpu=2,mem=64G,node=1\n5_0|1800|cpu=8,gres/gpu:a100=2,node=1\n6|900|cpu=4\n"
    assert parse_sacct_usage(acct) == {"gpu_hours": 2.0, "task_hours": 1.25}
