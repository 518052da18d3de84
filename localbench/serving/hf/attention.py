"""Attention for the ``hf`` engine on CPU: grouped matmuls for decode steps and prompt chunks.

Why: with a padding mask, transformers' ``sdpa`` path copies every key/value head once per query
head it serves (``repeat_kv``) before calling SDPA, and PyTorch's CPU SDPA is slow in both shapes
this engine needs:
- a decode step (one query token): measured on SmolLM2-135M (9 query heads over 3 KV heads,
  bf16, 2 cores), one step's attention over 3,000 cached tokens took 49 ms per layer at batch 16
  that way, 19.5 ms with SDPA's own ``enable_gqa``, and 2.4 ms as two grouped matmuls (the query
  heads that share a KV head multiply that head's keys together);
- a prompt chunk (many query tokens over a long cached history, an agent's next turn): SDPA's
  CPU kernel reaches about 150 GFLOP/s in bf16 whether or not it gets a mask, where a bf16
  batched matmul reaches 800-900. Scores as one batched matmul, an additive mask and a bf16
  softmax took 3.9 ms against 9.8 ms for SDPA (200 new tokens over 3,200 cached, one layer).
  This is the same arithmetic as transformers' ``eager`` attention (scores in the model's
  dtype, softmax accumulated in float32).

Registered with transformers' attention interface under ``ATTENTION_NAME``, with transformers' own
``eager_mask`` as its mask function: every forward pass turns its mask into an additive bias (0 where
a query may attend, the dtype's lowest finite value where not) once, and every layer adds that bias.
The lowest value is finite, so a padding row that may attend to nothing averages harmlessly instead
of turning NaN. The engine's decode steps build their own bias the same way
(``BufferedKV.attention_mask``).
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
    attention_mask: torch.Tensor | None,  # [batch, 1, q_len, kv_len] additive bias (or bool), or None (causal)
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
        return _prompt_attention(query, key, value, attention_mask, scale, is_causal), None
    # Heads h = kv * group + g share KV head kv (the order repeat_kv uses). Scores are computed as
    # keys @ queries^T with 3-d batched matmuls: with many keys and few queries that is the
    # fastest form on CPU (measured 37 ms against 54 ms for queries @ keys^T in 4-d, one decode
    # step's attention over 30 layers, batch 16, 2,000 cached tokens, bf16).
    q = query.reshape(batch * kv_heads, group * q_len, head_dim)
    k = key.reshape(batch * kv_heads, kv_len, head_dim)
    v = value.reshape(batch * kv_heads, kv_len, head_dim)
    scores = torch.bmm(k, q.transpose(1, 2)).transpose(1, 2).float().view(batch, kv_heads, group * q_len, kv_len)
    scores = scores * scale
    bias = _as_bias(attention_mask, q_len, kv_len, scores.dtype, query.device,
                    causal=q_len > 1 and (is_causal if is_causal is not None else True))
    if bias is not None:
        scores.view(batch, kv_heads, group, q_len, kv_len).add_(bias[:, :, None])
    probs = torch.softmax(scores, dim=-1).to(value.dtype).view(batch * kv_heads, group * q_len, kv_len)
    out = torch.bmm(probs, v).reshape(batch, heads, q_len, head_dim)
    return out.transpose(1, 2).contiguous(), None


_SCORES_PER_BLOCK = 8 * 2**20  # score elements per block of query tokens (16 MB in bf16)


def _prompt_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attention_mask: torch.Tensor | None, scale: float, is_causal: bool | None) -> torch.Tensor:
    """Attention of a prompt chunk (many query tokens), in blocks of query tokens so the scores
    stay small: scores = queries @ keys^T per KV head, plus the mask as an additive bias, softmax,
    then @ values. Returns [batch, q_len, heads, head_dim] like the decode path."""
    batch, heads, q_len, head_dim = query.shape
    kv_heads, kv_len = key.shape[1], key.shape[2]
    group = heads // kv_heads
    bias = _as_bias(attention_mask, q_len, kv_len, query.dtype, query.device,
                    causal=is_causal if is_causal is not None else True)
    q = (query * scale).view(batch, kv_heads, group, q_len, head_dim)
    k = key.reshape(batch * kv_heads, kv_len, head_dim).transpose(1, 2)
    v = value.reshape(batch * kv_heads, kv_len, head_dim)
    out = torch.empty_like(q)
    step = max(1, _SCORES_PER_BLOCK // (batch * heads * kv_len))
    for start in range(0, q_len, step):
        end = min(q_len, start + step)
        scores = torch.bmm(q[:, :, :, start:end].reshape(batch * kv_heads, group * (end - start), head_dim), k)
        if bias is not None:
            scores.view(batch, kv_heads, group, end - start, kv_len).add_(bias[:, :, None, start:end])
        probs = torch.softmax(scores, dim=-1)
        out[:, :, :, start:end] = torch.bmm(probs, v).view(batch, kv_heads, group, end - start, head_dim)
    return out.view(batch, heads, q_len, head_dim).transpose(1, 2).contiguous()


def _as_bias(mask: torch.Tensor | None, q_len: int, kv_len: int, dtype: torch.dtype, device: torch.device,
             causal: bool) -> torch.Tensor | None:
    """The mask as an additive bias [batch or 1, 1, q_len, kv_len], or None when nothing is masked.

    In the engine the mask already is one (made once per forward pass, see the module docstring);
    a boolean mask (True = attend) or no mask at all, from other callers, is converted here."""
    if mask is not None and mask.dtype != torch.bool:
        return mask
    if mask is None and not causal:
        return None
    allowed = mask if mask is not None else torch.ones(q_len, kv_len, dtype=torch.bool, device=device).tril(kv_len - q_len)[None, None]
    return bias_from_allowed(allowed, dtype)


def bias_from_allowed(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """0 where ``allowed`` (boolean) is True, the dtype's lowest finite value where it is False."""
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill_(~allowed, torch.finfo(dtype).min)


def install(model: Any) -> bool:
    """Switch a CPU model from ``sdpa`` to grouped attention; False (unchanged) when it does not apply."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    if getattr(model.config, "_attn_implementation", None) != "sdpa":
        return False
    if next(model.parameters()).device.type != "cpu":
        return False  # CUDA's SDPA kernels take masks and GQA natively; not measured here
    AttentionInterface.register(ATTENTION_NAME, grouped_attention)
    AttentionMaskInterface.register(ATTENTION_NAME, eager_mask)  # an additive bias, made once per pass
    try:
        model.set_attn_implementation(ATTENTION_NAME)
    except (ValueError, AttributeError):
        return False
    return getattr(model.config, "_attn_implementation", None) == ATTENTION_NAME
