"""The preflight (``runtime.preflight``): before its first simulation a run sends every engine one
constrained request of each schema it will be sent, so an engine that refuses one stops the run
seconds after it is ready, in one line, with nothing written as a simulation; `localbench doctor
--preflight PRESET` does the same alone. A refusing stand-in engine plays the GPU engine that
refuses (its message is Model Runner V2's); the real hf engine with the tiny model and SmolLM2
takes every schema of the shipped examples."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from localbench.cli import app
from localbench.serving.types import Backend, RawCompletion

V2_MESSAGE = "Too many logit bias tokens: 3596. The max size is 1024."
EXAMPLES = sorted(p for p in (Path(__file__).resolve().parents[1] / "examples").glob("*.yaml")
                  if not p.stem.startswith("study-"))  # run specs; study-*.yaml are study files


class RefusingBackend(Backend):
    """Stands in for a GPU engine that refuses requests of one schema (as Model Runner V2 refused the
    old control-character ban), and answers every other request with '{}'."""

    engine = "hf"
    grammar_backend = "xgrammar"

    def __init__(self, preset, refuse: str):
        from localbench.serving.weights import declared_identity

        self.identity = declared_identity(preset)
        self.refuse = refuse
        self.asked: list[str] = []
        self.max_model_len = 4096

    async def complete(self, request):
        self.asked.append(request.output.name if request.output is not None else "")
        if request.output is not None and request.output.name == self.refuse:
            raise ValueError(V2_MESSAGE)
        return RawCompletion(text="{}", finish_reason="stop", tokens_in=1, tokens_out=1)

    def count_tokens(self, messages):
        return 1

    def describe(self):
        return {"engine": self.engine}

    async def aclose(self):
        pass


def _refusing(monkeypatch, module, refuse: str) -> list[RefusingBackend]:
    opened: list[RefusingBackend] = []

    def open_backend(preset, engine="auto", **_):
        from localbench.serving.presets import load_preset

        opened.append(RefusingBackend(load_preset(preset) if isinstance(preset, str) else preset, refuse))
        return opened[-1]

    monkeypatch.setattr(module, "open_backend", open_backend)
    return opened


def test_doctor_preflight_names_a_refused_request_in_one_line(monkeypatch):
    from localbench.serving import engines

    _refusing(monkeypatch, engines, "AgentAction")
    r = CliRunner().invoke(app, ["doctor", "--preflight", "tiny-random", "--benchmark", "asb"])
    assert r.exit_code == 1, r.output
    (line,) = [ln for ln in r.output.splitlines() if ln.startswith("preflight:")]
    assert line.startswith("preflight: preset 'tiny-random' (engine hf) refused a request of schema 'AgentAction' (")
    assert line.endswith(f"ValueError: {V2_MESSAGE}")


def test_a_refused_schema_stops_the_run_before_its_first_simulation(monkeypatch, tmp_path):
    from localbench.runlog import RunPaths
    from localbench.serving import session

    opened = _refusing(monkeypatch, session, "Reply")
    r = CliRunner().invoke(app, ["run", "--model", "agent=tiny-random", "--limit", "1", "--conditions", "L0",
                                 "--out", str(tmp_path)])
    from localbench.runtime.preflight import PreflightError

    assert isinstance(r.exception, PreflightError), r.output  # `localbench` prints it as one "error:" line
    line = str(r.exception)
    assert "\n" not in line and line.startswith(
        "preflight: preset 'tiny-random' (agent, engine hf) refused a request of schema 'Reply' (")
    assert line.endswith(f"ValueError: {V2_MESSAGE}") and PreflightError.exit_code == 1
    (run_dir,) = tmp_path.iterdir()
    transcripts = RunPaths(run_dir).transcripts_path
    assert not transcripts.exists() or transcripts.read_text() == ""  # no simulation written, failed or not
    assert set(opened[0].asked) >= {"AgentAction", "Reply", "CoordinatorDecision"}  # one of each, and no more
    assert len(opened[0].asked) == len(set(opened[0].asked))


@pytest.fixture(scope="module")
def cpu_backends(tiny_dir, smollm2_dir):
    from localbench.serving.hf.engine import HFBackend

    backends = [HFBackend.from_preset("tiny-random"), HFBackend.from_preset("smollm2-135m")]
    yield backends
    for b in backends:
        asyncio.run(b.aclose())


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_the_examples_schemas_pass_the_preflight_on_cpu(example, cpu_backends):
    """Every schema each shipped example's run would send (every role, judge included) is taken by
    the real hf engine with the tiny model and with SmolLM2 (the vllm engine: test_vllm_engine)."""
    from localbench.pipeline import benchmark_of, preflight_outputs
    from localbench.runtime.preflight import check_backend
    from localbench.spec import load_spec

    spec = load_spec(example)
    bm = benchmark_of(spec)
    scenarios = list(bm.load_scenarios(spec.scenarios, spec.categories, 2).values())
    outputs = [o for specs in preflight_outputs(spec, bm, scenarios, pipelined=True).values() for o in specs]
    assert outputs, f"{example.name}: the benchmark declares no preflight schemas"
    for backend in cpu_backends:
        assert asyncio.run(check_backend(backend, outputs, backend.identity.preset)) == []
