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
