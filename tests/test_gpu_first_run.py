"""A first GPU run that cannot die on its first request (issue 43), checked on CPU against vLLM's
own GPU code: what Model Runner V2 (vLLM's default on CUDA) refuses in a request and which logits
processors it loads, read from the installed vLLM's V2 modules; the shipped presets' real
vocabularies (tests/vocabularies.py); memory shares by pipeline shape on a simulated H100.
Each test fails on the code before the fix (a logit-bias ban of ~3,600 ids for Llama 3 and a
V1-only logits processor on the served path; shares split with a judge that never runs beside
the agent)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

from localbench.serving.device import Device
from localbench.serving.presets import load_preset
from localbench.serving.types import GenerationRequest

pytest.importorskip("vllm")

H100 = Device("cuda", "NVIDIA H100 80GB HBM3", 79.2, (9, 0), 1)
SHIPPED = sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "serving").glob("*.yaml"))


def _v2_admits(params) -> None:
    """Run Model Runner V2's own admission of a request's token lists (``LogitBiasState.add_request``,
    the code that raises inside the GPU engine), over host-side stand-ins for its GPU buffers."""
    import numpy as np
    from vllm.v1.worker.gpu.sample.logit_bias import LogitBiasState

    def counts():
        return SimpleNamespace(np=np.zeros(1, dtype=np.int32))

    staged = SimpleNamespace(stage_write=lambda *a: None)
    state = LogitBiasState.__new__(LogitBiasState)
    state.prompt_len_np = np.zeros(1, dtype=np.int32)
    state.num_allowed_token_ids, state.allowed_token_ids = counts(), staged
    state.num_logit_bias, state.logit_bias_token_ids, state.logit_bias = counts(), staged, staged
    state.min_lens, state.num_stop_token_ids, state.restore_when_all_masked = counts(), counts(), counts()
    state.stop_token_ids = staged
    state.use_logit_bias = np.zeros(1, dtype=bool)
    state.add_request(0, params)


class _RecordingLLM:
    """Stands in for AsyncLLM around a real tokenizer: records the SamplingParams it is sent."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.model_config = SimpleNamespace(max_model_len=8192, get_vocab_size=lambda: len(tokenizer))
        self.sent = []

    def get_tokenizer(self):
        return self.tokenizer

    async def generate(self, prompt, params, request_id):
        self.sent.append(params)
        yield SimpleNamespace(outputs=[SimpleNamespace(text="{}", finish_reason="stop", token_ids=[1])],
                              prompt_token_ids=[1])


def _action_request() -> GenerationRequest:
    from localbench.benchmarks.asb.actions import action_spec

    spec = action_spec(("alice", "bob"), ("send", "broadcast", "pass", "done"), 384)
    return GenerationRequest(messages=[{"role": "user", "content": "Your turn."}], output=spec, max_tokens=64, seed=3)


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_presets_constrained_request_fits_model_runner_v2(name, smollm2_dir):
    """The request the in-process engine sends for an AgentSocialBench action, with the preset's own
    vocabulary, passes V2's admission and vLLM's grammar validation. (Before: a -100 logit bias on
    every control-byte token: 3,596 ids for Llama 3, 3,518 for Qwen, past V2's 1,024.)"""
    from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar

    from localbench.serving.vllm_engine import VLLMBackend
    from localbench.serving.vllm_rules import refusals
    from localbench.serving.weights import declared_identity
    from vocabularies import for_preset

    tokenizer, _ = for_preset(name, smollm2_dir)
    llm = _RecordingLLM(tokenizer)
    backend = VLLMBackend(llm, declared_identity(load_preset(name)), "/nowhere", {}, {}, on_cpu=False)
    asyncio.run(backend.complete(_action_request()))
    (params,) = llm.sent
    _v2_admits(params)  # raises ValueError("Too many logit bias tokens: ...") where the GPU engine would
    assert refusals(params) == []
    assert not params.logit_bias and not params.allowed_token_ids  # nothing that grows with the vocabulary
    validate_xgrammar_grammar(params)  # vLLM's frontend takes the grammar (V1 and V2 alike)


def test_the_v2_limits_read_here_are_the_ones_v2_applies():
    """``vllm_rules.refusals`` (what the engine checks before sending) agrees with V2's own admission
    on both sides of each limit, so a request it lets through is one the GPU engine takes."""
    from vllm import SamplingParams

    from localbench.serving.vllm_rules import refusals, v2_limits

    limits = v2_limits()
    assert limits["logit_bias"] == limits["allowed_token_ids"] == 1024
    fits = SamplingParams(logit_bias={i: -100.0 for i in range(limits["logit_bias"])})
    over = SamplingParams(logit_bias={i: -100.0 for i in range(3596)})  # the old ban, with Llama 3's vocabulary
    _v2_admits(fits)
    assert refusals(fits) == []
    with pytest.raises(ValueError, match="Too many logit bias tokens: 3596"):
        _v2_admits(over)
    assert refusals(over) == ["3596 logit-bias tokens (Model Runner V2 takes at most 1024 per request)"]
    allowed = SamplingParams(allowed_token_ids=list(range(1025)))
    with pytest.raises(ValueError, match="Too many allowed token IDs"):
        _v2_admits(allowed)
    assert refusals(allowed) and "allowed token ids" in refusals(allowed)[0]


def test_the_engine_refuses_such_a_request_itself_with_one_line(monkeypatch, tiny_dir):
    """A request V2 would refuse is an EngineError naming the preset and the limit, not a dead engine."""
    from transformers import AutoTokenizer

    from localbench.serving import vllm_engine
    from localbench.serving.types import EngineError
    from localbench.serving.weights import declared_identity

    llm = _RecordingLLM(AutoTokenizer.from_pretrained(tiny_dir))
    backend = vllm_engine.VLLMBackend(llm, declared_identity(load_preset("tiny-random")), "/nowhere", {}, {}, on_cpu=True)
    monkeypatch.setattr(vllm_engine, "refusals", lambda params: ["3596 logit-bias tokens (Model Runner V2 takes at most 1024 per request)"])
    with pytest.raises(EngineError, match="preset 'tiny-random' would be refused by vLLM's Model Runner V2: 3596 logit-bias"):
        asyncio.run(backend.complete(_action_request()))
    assert llm.sent == []  # nothing reached the engine


def test_every_logits_processor_the_project_registers_loads_in_v1_and_v2(tiny_dir):
    """Whatever the project hands vLLM as logits processors (in process, or `localbench serve`'s
    flags) loads through V2's loader (the GPU default) as through V1's. (Before: the served path
    registered a V1-only processor, and V2 refused it at the server's start.)"""
    from vllm.v1.sample.logits_processor import LogitsProcessor as V1Processor
    from vllm.v1.sample.logits_processor import _load_logitsprocs_by_fqcns as load_v1
    from vllm.v1.worker.gpu.sample.logits_processor.loader import _load_v2_logitsprocs_by_fqcns as load_v2

    from localbench.serving.server import VLLMServer
    from localbench.serving.vllm_engine import engine_settings

    registered: set[str] = set()
    for name in SHIPPED:
        preset = load_preset(name)
        for served in (False, True):
            registered.update(engine_settings(preset, on_cpu=False, device=H100, served=served).get("logits_processors", []))
        registered.update(engine_settings(preset, on_cpu=True).get("logits_processors", []))
    cmd = VLLMServer("tiny-random", port=8123, on_cpu=True, location=str(tiny_dir)).command()
    if "--logits-processors" in cmd:
        registered.add(cmd[cmd.index("--logits-processors") + 1])
    for fqcn in sorted(registered):
        assert load_v2([fqcn]) and load_v1([fqcn]), fqcn
    # the check is live: V2's loader refuses a processor written to V1's interface only
    v1_only = type("V1Only", (V1Processor,), {"apply": lambda self, logits: logits, "is_argmax_invariant": lambda self: True,
                                              "update_state": lambda self, batch_update: None})
    with pytest.raises(ValueError, match="is not a subclass"):
        load_v2([v1_only])


# ---- memory for the engines that run together -------------------------------------------------

SHAPES = {
    # shape: (models, {role: share it opens with; None = the preset's own})
    "one preset": ({"agent": "qwen2.5-7b-instruct"}, {"agent": None, "user_sim": None, "judge": None}),
    "agent + judge": ({"agent": "qwen2.5-7b-instruct", "judge": "llama-3.1-8b-instruct"},
                      {"agent": None, "user_sim": None, "judge": None}),
    "agent + user simulator + judge": (
        {"agent": "qwen2.5-7b-instruct", "user_sim": "llama-3.1-8b-instruct", "judge": "mistral-7b-instruct-v0.3"},
        {"agent": 0.45, "user_sim": 0.45, "judge": None}),
    "pipelined judging": ({"agent": "qwen2.5-7b-instruct", "user_sim": "llama-3.1-8b-instruct", "judge": "qwen2.5-7b-instruct"},
                          {"agent": 0.45, "user_sim": 0.45, "judge": None}),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_gpu_is_split_only_among_engines_open_at_the_same_time(shape, monkeypatch, tmp_path):
    """On one H100: the simulation roles' engines (one per distinct preset) split the card; the
    judge's stage opens after they have closed and gets its preset's whole share. (Before: a judge
    that never runs beside the agent still halved both: 0.45 each, a KV cache ~3x smaller.)"""
    from localbench import pipeline
    from localbench.runtime.clients import check_models
    from localbench.serving import availability, session
    from localbench.spec import RunSpec

    models, want = SHAPES[shape]
    monkeypatch.setattr(session, "detect_device", lambda: H100)
    monkeypatch.setattr(availability, "check", lambda preset, has_cuda=None: availability.Availability(True, "ok", ["vllm"]))
    spec = RunSpec(benchmark="asb", out=str(tmp_path), models=models, serving={"engine": "vllm"})
    plan = check_models(spec, pipeline.model_roles(spec))
    got = {role: serving.gpu_memory_utilization for (role, _), serving in plan.items()}
    assert got == want and {s.engine for s in plan.values()} == {"vllm"}
    if shape == "pipelined judging":  # the judge's calls go to the agent's engine: no engine of its own
        assert pipeline.pipelined(spec) and pipeline.shares_engine(spec)


def test_a_planned_share_reaches_the_engine(monkeypatch, tmp_path):
    """The share in the plan is the one the engine is opened with (through ``client_for``)."""
    from localbench.runtime.clients import check_models, client_for
    from localbench.serving import availability, session
    from localbench.spec import RunSpec

    monkeypatch.setattr(session, "detect_device", lambda: H100)
    monkeypatch.setattr(availability, "check", lambda preset, has_cuda=None: availability.Availability(True, "ok", ["vllm"]))
    opened = {}
    monkeypatch.setattr(session, "open_backend", lambda preset, engine, **o: opened.setdefault(preset.name, o) or
                        SimpleNamespace(engine=engine))
    monkeypatch.setattr(session, "StructuredClient", lambda backend, **_: backend)
    spec = RunSpec(benchmark="asb", out=str(tmp_path), serving={"engine": "vllm", "max_batch_size": 96},
                   models={"agent": "qwen2.5-7b-instruct", "user_sim": "llama-3.1-8b-instruct", "judge": "mistral-7b-instruct-v0.3"})
    plan = check_models(spec)
    for role in ("agent", "user_sim", "judge"):
        client_for(spec, role, tmp_path, cache=None, engines=plan)
    assert opened["qwen2.5-7b-instruct"]["gpu_memory_utilization"] == 0.45
    assert opened["llama-3.1-8b-instruct"]["gpu_memory_utilization"] == 0.45
    assert "gpu_memory_utilization" not in opened["mistral-7b-instruct-v0.3"]  # alone: its preset's 0.85
    assert {o["max_batch_size"] for o in opened.values()} == {96}  # serving.max_batch_size reaches vLLM too


# ---- served concurrency comes from the server ------------------------------------------------

def test_a_served_run_sizes_itself_by_its_servers_not_by_this_machine(monkeypatch):
    from localbench.serving import session
    from localbench.spec import EngineOptions

    monkeypatch.setattr(session, "detect_device", lambda: Device("cpu"))  # a laptop against an H100 server
    assert session.concurrency(EngineOptions(), engines=1, served=[1024]).as_dict() == {
        "simulations": 1024, "requests": 1024, "judge": 1024, "source": "server"}
    assert session.concurrency(EngineOptions(max_concurrency=8), engines=1, served=[1024]).simulations == 8  # the spec wins
    assert session.concurrency(EngineOptions(), engines=1).simulations == 64  # in process on CPU: as before


# ---- the grammar every xgrammar path decodes with ----------------------------------------------

def test_the_grammar_asks_for_the_properties_in_the_schemas_order_and_closes_bounded_strings():
    """The schema's order is the order the model writes in (a judge quotes its evidence before its
    verdict), so the grammar must not come from a key-sorted copy; and no raw control character
    enters a length-bounded string, with no token ban beside it."""
    import xgrammar as xgr

    from localbench.serving.xgrammar_quirks import json_grammar

    schema = {"type": "object", "additionalProperties": False, "required": ["verdict", "evidence"],
              "properties": {"verdict": {"enum": ["leak", "none"]}, "evidence": {"type": "string", "maxLength": 20}}}
    grammar = xgr.Grammar.from_ebnf(json_grammar(schema))

    def takes(text: str) -> bool:
        return xgr.testing._is_grammar_accept_string(grammar, text)

    assert takes('{"verdict":"leak","evidence":"a b"}')
    assert not takes('{"evidence":"a b","verdict":"leak"}')  # the schema's order, not the sorted one
    assert not takes('{"verdict":"leak","evidence":"a\tb"}')  # a raw tab: closed
    assert not takes('{"verdict":"leak","evidence":"' + "x" * 21 + '"}')  # the bound holds


def _example_specs(tmp_path: Path) -> list[Path]:
    """Every shipped run spec, and SopriBench's with every attacker the benchmark has (its example
    leaves out the HolmesEye-adapted baseline, whose stages send schemas of their own)."""
    import yaml

    examples = sorted(p for p in (Path(__file__).resolve().parents[1] / "examples").glob("*.yaml")
                      if not p.stem.startswith("study-"))
    sopri = yaml.safe_load((Path(__file__).resolve().parents[1] / "examples" / "sopri-all-attackers.yaml").read_text())
    sopri["conditions"] = [*sopri["conditions"], "holmeseye"]
    every = tmp_path / "sopri-every-attacker.yaml"
    every.write_text(yaml.safe_dump(sopri))
    return [*examples, every]


def test_every_schema_a_shipped_run_sends_fits_model_runner_v2(tmp_path, smollm2_dir):
    """Each schema of each shipped run (every role, judges included, the preflight's list), as the
    in-process engine sends it with Llama 3's vocabulary (the largest ban there was): V2's admission
    takes it, vLLM's grammar validation takes it, nothing grows with the vocabulary."""
    from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar

    from localbench.pipeline import benchmark_of, preflight_outputs
    from localbench.serving.vllm_engine import VLLMBackend
    from localbench.serving.vllm_rules import refusals
    from localbench.serving.weights import declared_identity
    from localbench.spec import load_spec
    from vocabularies import for_preset

    tokenizer, _ = for_preset("llama-3.1-8b-instruct", smollm2_dir)
    sent = 0
    for path in _example_specs(tmp_path):
        spec = load_spec(path)
        bm = benchmark_of(spec)
        scenarios = list(bm.load_scenarios(spec.scenarios, spec.categories, 2).values())
        outputs = [o for specs in preflight_outputs(spec, bm, scenarios, pipelined=True).values() for o in specs]
        assert outputs, path.name
        llm = _RecordingLLM(tokenizer)
        backend = VLLMBackend(llm, declared_identity(load_preset("llama-3.1-8b-instruct")), "/nowhere", {}, {},
                              on_cpu=False)

        async def send_each(backend=backend, outputs=outputs):
            for output in outputs:
                await backend.complete(GenerationRequest(messages=[{"role": "user", "content": "Answer."}],
                                                         output=output, max_tokens=64, seed=0))

        asyncio.run(send_each())
        for params in llm.sent:
            _v2_admits(params)
            assert refusals(params) == [], path.name
            assert not params.logit_bias and not params.allowed_token_ids, path.name
            validate_xgrammar_grammar(params)
        sent += len(llm.sent)
    assert sent > 20
