"""The hf engine's CPU attention for prompt chunks against PyTorch's SDPA, on random tensors.

(The whole-model comparison with transformers' ``sdpa`` path, decode steps included, is in
test_hf_prefix_cache.py.)
"""

from __future__ import annotations

import pytest
import torch

from localbench.serving import hf_attention


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


def test_the_mask_bias_is_made_once_per_mask_and_remade_for_a_new_one():
    _, _, _, allowed = _inputs(torch.float32)
    first = hf_attention._mask_bias(allowed, 40, 90, torch.float32, allowed.device, causal=True)
    assert hf_attention._mask_bias(allowed, 40, 90, torch.float32, allowed.device, causal=True) is first
    other = allowed.clone()
    other[2] = False
    second = hf_attention._mask_bias(other, 40, 90, torch.float32, allowed.device, causal=True)
    assert second is not first and (second[2] < -1e30).all() and (first[2] == 0).any()
