"""The hf engine's packed CPU linear layers (localbench.serving.hf.linear) on real models: same logits, less memory."""

from __future__ import annotations

import pytest
import torch

from localbench.serving.hf import linear as hf_linear

pytestmark = pytest.mark.timeout(120)


def _load(path, dtype):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()


def _logits(model, ids):
    with torch.inference_mode():
        return model(input_ids=ids).logits


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_packed_model_gives_the_same_logits(smollm2_dir, dtype):
    model = _load(smollm2_dir, dtype)
    ids = torch.randint(0, 1000, (2, 12), generator=torch.Generator().manual_seed(0))
    before = _logits(model, ids)
    before_step = _logits(model, ids[:1, :1])
    n = hf_linear.pack_linears(model)
    if n == 0:
        pytest.skip("this PyTorch build has no oneDNN linear packing")
    layers = model.config.num_hidden_layers
    assert n == 7 * layers + 1 == hf_linear.packed_count(model)  # q, k, v, o, gate, up, down per layer + head
    after, after_step = _logits(model, ids), _logits(model, ids[:1, :1])
    if dtype == torch.bfloat16:  # the same kernels, in another weight layout: bit for bit
        assert torch.equal(before, after) and torch.equal(before_step, after_step)
    else:
        assert torch.allclose(before, after, atol=1e-3) and torch.allclose(before_step, after_step, atol=1e-3)
    assert hf_linear.pack_linears(model) == 0  # packing twice changes nothing


def test_packing_frees_weights_but_keeps_a_tied_head(tiny_dir):
    model = _load(tiny_dir, torch.bfloat16)
    head, embed = model.get_output_embeddings(), model.get_input_embeddings()
    assert head.weight is embed.weight  # tiny-random ties them
    q_proj = model.model.layers[0].self_attn.q_proj
    hf_linear.pack_linears(model)
    assert q_proj.weight.numel() == 0  # replaced by its packed copy
    assert head.weight is embed.weight and head.weight.numel() == embed.num_embeddings * embed.embedding_dim
    assert head.out_features == embed.num_embeddings


def test_under_omp_thread_limit_1_nothing_is_packed_and_replies_stay_valid(tiny_dir):
    """OMP_THREAD_LIMIT=1 (common on Slurm) makes oneDNN's packed linear return garbage at real
    shapes: every hf reply then failed its grammar. The engine must notice and keep F.linear."""
    import os
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import asyncio, json
        import torch
        from transformers import AutoModelForCausalLM
        from localbench.serving.hf import linear
        from localbench.serving.engines import open_backend
        from localbench.serving.client import StructuredClient
        from localbench.serving.output import OutputSpec
        from localbench.serving.types import GenerationRequest

        model = AutoModelForCausalLM.from_pretrained({str(tiny_dir)!r}, dtype=torch.float32).eval()
        ids = torch.randint(0, 1000, (1, 6), generator=torch.Generator().manual_seed(0))
        with torch.inference_mode():
            before = model(input_ids=ids).logits
            n = linear.pack_linears(model)
            after = model(input_ids=ids).logits

        async def reply():
            b = open_backend("tiny-random", "hf")
            spec = OutputSpec.from_schema({{"type": "object", "properties": {{"a": {{"type": "string", "maxLength": 20}}}},
                                            "required": ["a"], "additionalProperties": False}}, name="t")
            r = await StructuredClient(b, cache=None).generate(GenerationRequest(
                messages=[{{"role": "user", "content": "hi"}}], output=spec, role="x", max_tokens=40,
                temperature=0.7, seed=1, tag="t"))
            await b.aclose()
            return r.ok

        print(json.dumps({{"packed": n, "same": bool(torch.allclose(before, after, atol=1e-3)),
                          "ok": asyncio.run(reply())}}))
    """)
    env = {**os.environ, "OMP_THREAD_LIMIT": "1", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=110, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    got = __import__("json").loads(out.stdout.strip().splitlines()[-1])
    assert got["same"] and got["ok"], got
