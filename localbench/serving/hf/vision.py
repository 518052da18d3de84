"""The hf engine's image path: one request with pixels, decoded on its own, grammar-constrained.

Why separate from ``decode``: the batched loop keys reused prompt KV by token ids, and an image
prompt's ids are the same placeholder tokens whatever the pixels, so image rows must never share
or store prompt KV; and each VLM family takes its own image tensors (``pixel_values``, image sizes,
grid shapes) and positions (Qwen2.5-VL's 3-D rotary positions), which its own ``forward`` derives
when given ``cache_position``. One row at a time is what a laptop-sized VLM run needs. The token
choice is the batched loop's own (``choose``: the row's grammar mask, then greedy or the row's
seeded draw), so a reply is chosen the same way on both paths.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from localbench.serving.hf.decode import (
    DecodeStats,
    Row,
    RowOutput,
    allocate_bitmask,
    choose,
    row_generator,
)


def prepare(inputs: dict[str, Any], model: Any) -> dict[str, Any]:
    """The processor's extra tensors (pixels, sizes, grids) on the model's device; floating ones in its dtype."""
    param = next(model.parameters())
    out = {}
    for k, v in inputs.items():
        if isinstance(v, torch.Tensor):
            v = v.to(param.device, dtype=param.dtype if v.is_floating_point() else v.dtype)
        out[k] = v
    return out


def decode_one(model: Any, prompt_ids: list[int], images: dict[str, Any], row: Row, *, stop_ids: set[int],
               vocab_limit: int, stats: DecodeStats | None = None) -> RowOutput:
    """Generate one reply to a prompt whose image tensors are ``images``; stops like the batched loop
    (a stop token, a complete grammar, a rejected token, or ``max_tokens``)."""
    stats = stats if stats is not None else DecodeStats()
    out = RowOutput()
    bitmask = allocate_bitmask(1, model)
    if row.constraint is not None and row.constraint.fill(bitmask, 0):
        out.finish_reason = "stop"  # the grammar is complete when empty
        return out
    if row.max_tokens <= 0:
        return out
    device = next(model.parameters()).device
    generator = row_generator(row)
    ids = torch.tensor([prompt_ids], dtype=torch.long, device=device)
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        t0 = time.perf_counter()
        res = model(input_ids=ids, attention_mask=mask, cache_position=torch.arange(len(prompt_ids), device=device),
                    use_cache=True, logits_to_keep=1, **prepare(images, model))
        cache, logits = res.past_key_values, res.logits[:, -1, :].float()
        stats.prefill_s += time.perf_counter() - t0
        stats.prefill_tokens += len(prompt_ids)
        t0 = time.perf_counter()
        while True:
            tok = choose(logits, [row], [generator], bitmask, vocab_limit)[0]
            stats.generated += 1
            if tok in stop_ids:
                out.finish_reason = "stop"
                break
            if row.constraint is not None and not row.constraint.accept(tok):
                out.error = f"grammar rejected token {tok} after {len(out.token_ids)} tokens"
                out.finish_reason = "error"
                break
            out.token_ids.append(tok)
            if row.constraint is not None and row.constraint.fill(bitmask, 0):
                out.finish_reason = "stop"  # only a stop token may follow: the reply is complete
                break
            if len(out.token_ids) >= row.max_tokens:
                out.finish_reason = "length"
                break
            mask = torch.cat([mask, mask.new_ones((1, 1))], dim=1)
            position = torch.tensor([mask.shape[1] - 1], device=device)
            res = model(input_ids=torch.tensor([[tok]], device=device), attention_mask=mask, cache_position=position,
                        past_key_values=cache, use_cache=True, logits_to_keep=1)
            cache, logits = res.past_key_values, res.logits[:, -1, :].float()
            stats.decode_steps += 1
        stats.decode_s += time.perf_counter() - t0
    return out
