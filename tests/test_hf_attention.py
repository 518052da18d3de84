"""The hf engine's CPU attention for prompt chunks against PyTorch's SDPA, on random tensors.

(The whole-model comparison with transformers' ``sdpa`` path, decode steps included, is in
test_hf_prefix_cache.py.)
"""

from __future__ import annotations

import pytest
import torch

from localbench.serving.hf import attention as hf_attention


def _inputs(dtype: torch.dtype, batch: int = 3, heads: int = 6, kv_heads: int = 2, past: int = 50, new: int = 40):
    torch.manual_seed(0)
    query = torch.randn(batch, heads, new, 32, dtype=dtype)
    key = torch.randn(batch, kv_heads, past + new, 32, dtype=dtype)
    value = torch.randn(batch, kv_heads, past + new, 32, dtype=dtype)
    # the engine's layout: [padding][past][padding][new tokens], causal among the new tokens
    allowed = torch.ones(new, past + new, dtype=torch.bool).tril(past)[None, None].repeat(batch, 1, 1, 1)
    allowed[0, :, :, :20] = False  # row 0: a shorter past, left-padded
    allowed[1, :, :5, :] = False  # row 1: its first 5 new positions are padding and attend to nothing
    return query, key, value, allowed


def _reference(query, key, value, allowed):
    out = torch.nn.functional.scaled_dot_product_attention(
        query.double(), key.double(), value.double(), attn_mask=allowed, enable_gqa=True)
    return out.transpose(1, 2)


@pytest.mark.parametrize("dtype,atol", [(torch.float32, 1e-5), (torch.bfloat16, 3e-2)])
def test_prompt_attention_matches_sdpa_with_padding_and_a_past(dtype, atol, monkeypatch):
    query, key, value, allowed = _inputs(dtype)
    scale = query.shape[-1] ** -0.5
    whole = hf_attention._prompt_attention(query, key, value, allowed, scale, None)
    monkeypatch.setattr(hf_attention, "_SCORES_PER_BLOCK", 3 * 6 * 90 * 7)  # 7 query tokens per block
    blocked = hf_attention._prompt_attention(query, key, value, allowed, scale, None)
    expected = _reference(query, key, value, allowed)
    live = allowed.any(-1)[:, 0]  # query positions that attend to something
    assert whole.shape == expected.shape == (3, 40, 6, 32)
    assert torch.isfinite(whole).all() and torch.isfinite(blocked).all()  # padding rows average, not NaN
    assert torch.equal(whole, blocked)
    assert (whole.double() - expected)[live].abs().max() < atol


def test_prompt_attention_without_a_mask_is_causal():
    query, key, value, _ = _inputs(torch.float32, past=0)
    got = hf_attention._prompt_attention(query, key, value, None, query.shape[-1] ** -0.5, None)
    expected = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, is_causal=True, enable_gqa=True).transpose(1, 2)
    assert torch.allclose(got, expected, atol=1e-5)


def test_a_boolean_mask_and_its_additive_bias_give_the_same_attention():
    """The engine hands attention an additive bias (transformers' eager_mask, once per forward
    pass; the decode buffer's own); other callers may pass a boolean mask."""
    from transformers.masking_utils import eager_mask

    query, key, value, allowed = _inputs(torch.bfloat16)
    bias = hf_attention.bias_from_allowed(allowed, torch.bfloat16)
    assert (bias[allowed] == 0).all() and (bias[~allowed] == torch.finfo(torch.bfloat16).min).all()
    scale = query.shape[-1] ** -0.5
    assert torch.equal(hf_attention._prompt_attention(query, key, value, allowed, scale, None),
                       hf_attention._prompt_attention(query, key, value, bias, scale, None))
    step = query[:, :, -1:]
    assert torch.equal(hf_attention.grouped_attention(None, step, key, value, allowed[:, :, -1:])[0],
                       hf_attention.grouped_attention(None, step, key, value, bias[:, :, -1:])[0])
    # transformers' own bias for a left-padded causal batch is the same numbers
    pad = torch.ones(2, 12, dtype=torch.long)
    pad[0, :4] = 0
    made = eager_mask(batch_size=2, q_length=12, kv_length=12, attention_mask=pad.bool(), dtype=torch.bfloat16)
    expected = torch.ones(12, 12, dtype=torch.bool).tril()[None, None] & pad.bool()[:, None, None, :]
    assert torch.equal(made, hf_attention.bias_from_allowed(expected, torch.bfloat16))
