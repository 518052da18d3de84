"""Attention for the ``hf`` engine on CPU: decode steps as grouped matmuls, prompts through SDPA.

Why: with a padding mask, transformers' ``sdpa`` path copies every key/value head once per query
head it serves (``repeat_kv``) before calling SDPA, and PyTorch's CPU SDPA is slow for a single
query token. Measured on SmolLM2-135M (9 query heads over 3 KV heads, bf16, 2 cores), one decode
step's attention over 3,000 cached tokens took 49 ms per layer at batch 16 that way, 19.5 ms with
SDPA's own ``enable_gqa``, and 2.4 ms as two grouped matmuls (the query heads that share a KV head
multiply that head's keys together). At long contexts this is most of a decode step, and it grows
with the batch, so it decided how much batching could buy. Prompt chunks (many query tokens) stay
on SDPA with ``enable_gqa``, which is the fastest of the three there.

Registered with transformers' attention interface under ``ATTENTION_NAME``; the mask is the one
``sdpa`` gets (boolean, True = attend).
"""

from __future__ import annotations

from typing import Any

import torch

ATTENTION_NAME = "localbench_grouped"

_GROUPED_MAX_QUERIES = 64  # query rows (tokens x heads per KV head) up to which the matmul path wins


def grouped_attention(
    module: torch.nn.Module,
    query: torch.Tensor,  # [batch, heads, q_len, head_dim]
    key: torch.Tensor,  # [batch, kv_heads, kv_len, head_dim]
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,  # [batch, 1, q_len, kv_len] bool, or None (plain causal)
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    batch, heads, q_len, head_dim = query.shape
    kv_heads, kv_len = key.shape[1], key.shape[2]
    group = heads // kv_heads
    scale = scaling if scaling is not None else head_dim ** -0.5
    if q_len * group > _GROUPED_MAX_QUERIES:
        causal = attention_mask is None and q_len > 1 and (is_causal if is_causal is not None else True)
        out = torch.nn.functional.scaled_dot_product_attention(
            query, key, value, attn_mask=attention_mask, dropout_p=0.0, scale=scale,
            is_causal=causal, enable_gqa=group > 1,
        )
        return out.transpose(1, 2).contiguous(), None
    # Heads h = kv * group + g share KV head kv (the order repeat_kv uses). Scores are computed as
    # keys @ queries^T with 3-d batched matmuls: with many keys and few queries that is the
    # fastest form on CPU (measured 37 ms against 54 ms for queries @ keys^T in 4-d, one decode
    # step's attention over 30 layers, batch 16, 2,000 cached tokens, bf16).
    q = query.reshape(batch * kv_heads, group * q_len, head_dim)
    k = key.reshape(batch * kv_heads, kv_len, head_dim)
    v = value.reshape(batch * kv_heads, kv_len, head_dim)
    scores = torch.bmm(k, q.transpose(1, 2)).transpose(1, 2).float().view(batch, kv_heads, group * q_len, kv_len)
    scores = scores * scale
    if attention_mask is not None:
        allowed = attention_mask[:, :, None].expand(batch, 1, group, q_len, kv_len).reshape(batch, 1, group * q_len, kv_len)
    elif q_len > 1:
        allowed = torch.ones(q_len, kv_len, dtype=torch.bool, device=query.device).tril(kv_len - q_len)
        allowed = allowed.repeat(group, 1)[None, None]
    else:
        allowed = None
    if allowed is not None:
        # A finite floor, not -inf: a padding row that may attend to nothing gets a harmless uniform
        # average instead of NaN (which would spread through its values to later layers).
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, dim=-1).to(value.dtype).view(batch * kv_heads, group * q_len, kv_len)
    out = torch.bmm(probs, v).reshape(batch, heads, q_len, head_dim)
    return out.transpose(1, 2).contiguous(), None


def install(model: Any) -> bool:
    """Switch a CPU model from ``sdpa`` to grouped attention; False (unchanged) when it does not apply."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    if getattr(model.config, "_attn_implementation", None) != "sdpa":
        return False
    if next(model.parameters()).device.type != "cpu":
        return False  # CUDA's SDPA kernels take masks and GQA natively; not measured here
    AttentionInterface.register(ATTENTION_NAME, grouped_attention)
    AttentionMaskInterface.register(ATTENTION_NAME, sdpa_mask)
    try:
        model.set_attn_implementation(ATTENTION_NAME)
    except (ValueError, AttributeError):
        return False
    return getattr(model.config, "_attn_implementation", None) == ATTENTION_NAME
