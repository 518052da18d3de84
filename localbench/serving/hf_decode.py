"""The hf engine's decode loop: one batch of rows, a shared KV cache, a grammar and a seed per row.

Written out instead of calling ``model.generate`` because each row needs its own grammar (so a
batch mixes schemas), its own sampling temperature and its own random stream, and its own stop.
Sampling draws one uniform number per step from the row's own ``torch.Generator`` (seeded from
the request) and inverts the row's CDF with it, so a row's tokens do not depend on which other
rows share its batch, nor on whether it runs on CPU or GPU (up to the logits' floating-point
noise). Temperature 0 is greedy. Finished rows leave the batch (and the KV cache) at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from localbench.serving.hf_grammar import RowConstraint
from localbench.serving.types import FinishReason


@dataclass
class Row:
    """One request as the decode loop sees it."""

    prompt_ids: list[int]
    max_tokens: int
    temperature: float = 0.0
    seed: int = 0
    constraint: RowConstraint | None = None


@dataclass
class RowOutput:
    token_ids: list[int] = field(default_factory=list)  # generated tokens, stop token excluded
    finish_reason: FinishReason = "length"
    error: str | None = None  # set with finish_reason "error"


OnDone = Callable[[int, RowOutput], None]


def decode_batch(
    model: Any,
    rows: list[Row],
    *,
    pad_id: int,
    stop_ids: set[int],
    vocab_limit: int,
    on_done: OnDone,
) -> None:
    """Generate every row to its stop, calling ``on_done(index, output)`` as each one finishes.

    ``vocab_limit`` is the tokenizer's size: logits beyond it (embedding padding) are never picked.
    """
    from transformers import DynamicCache

    device = next(model.parameters()).device
    outputs = [RowOutput() for _ in rows]
    live = list(range(len(rows)))  # batch position -> row index
    generators = [_generator(r) for r in rows]

    # Rows that need no step at all: max_tokens 0, or a grammar that is complete when empty.
    bitmask = _allocate_bitmask(len(rows), model)
    for i, r in enumerate(rows):
        if r.constraint is not None and r.constraint.fill(bitmask, i):
            outputs[i].finish_reason = "stop"
        elif r.max_tokens > 0:
            continue
        on_done(i, outputs[i])
        live.remove(i)
    if not live:
        return

    width = max(len(rows[i].prompt_ids) for i in live)
    ids = torch.full((len(live), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(live), width), dtype=torch.long)
    for b, i in enumerate(live):
        p = rows[i].prompt_ids
        ids[b, width - len(p):] = torch.tensor(p, dtype=torch.long)
        mask[b, width - len(p):] = 1
    ids, mask = ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    bitmask = bitmask[live].contiguous()
    cache = DynamicCache(config=model.config)

    with torch.inference_mode():
        logits = _forward(model, ids, mask, positions, cache)
        while live:
            next_tokens = _choose(logits, [rows[i] for i in live], [generators[i] for i in live],
                                  bitmask, vocab_limit)
            keep: list[int] = []
            for b, (i, tok) in enumerate(zip(live, next_tokens)):
                out, row = outputs[i], rows[i]
                reason: FinishReason | None = None
                if tok in stop_ids:
                    reason = "stop"
                elif row.constraint is not None and not row.constraint.accept(tok):
                    out.error = f"grammar rejected token {tok} after {len(out.token_ids)} tokens"
                    reason = "error"
                else:
                    out.token_ids.append(tok)
                    if row.constraint is not None and row.constraint.fill(bitmask, b):
                        reason = "stop"  # only a stop token may follow: the reply is complete
                    elif len(out.token_ids) >= row.max_tokens:
                        reason = "length"
                if reason is None:
                    keep.append(b)
                else:
                    out.finish_reason = reason
                    on_done(i, out)
            if not keep:
                break
            step = torch.tensor([next_tokens[b] for b in keep], dtype=torch.long, device=device)[:, None]
            if len(keep) < len(live):
                sel = torch.tensor(keep, dtype=torch.long, device=device)
                cache.batch_select_indices(sel)
                mask, positions = mask[sel], positions[sel]
                bitmask = bitmask[keep].contiguous()
                live = [live[b] for b in keep]
            mask = torch.cat([mask, torch.ones((len(live), 1), dtype=mask.dtype, device=device)], dim=1)
            positions = positions[:, -1:] + 1
            logits = _forward(model, step, mask, positions, cache)


def _generator(row: Row) -> torch.Generator | None:
    if row.temperature <= 0:
        return None
    g = torch.Generator(device="cpu")
    g.manual_seed(int(row.seed))
    return g


def _allocate_bitmask(n: int, model: Any) -> torch.Tensor:
    import xgrammar as xgr

    return xgr.allocate_token_bitmask(n, _logits_width(model))


def _logits_width(model: Any) -> int:
    return int(model.get_output_embeddings().weight.shape[0])


def _forward(model: Any, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any) -> torch.Tensor:
    """Last-position logits (float32) for each row, extending the KV cache."""
    out = model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                use_cache=True, logits_to_keep=1)
    return out.logits[:, -1, :].float()


def _choose(
    logits: torch.Tensor,
    rows: list[Row],
    generators: list[torch.Generator | None],
    bitmask: torch.Tensor,
    vocab_limit: int,
) -> list[int]:
    """Next token of every row: grammar mask, then greedy or the row's own seeded draw."""
    import xgrammar as xgr

    n = len(rows)
    constrained = [b for b, r in enumerate(rows) if r.constraint is not None]
    if constrained:
        xgr.apply_token_bitmask_inplace(logits, bitmask.to(logits.device, non_blocking=True), indices=constrained)
    if vocab_limit < logits.shape[1]:
        logits[:, vocab_limit:] = float("-inf")
    picks = [0] * n
    greedy = [b for b, r in enumerate(rows) if r.temperature <= 0]
    sampled = [b for b, r in enumerate(rows) if r.temperature > 0]
    if greedy:
        chosen = (logits if len(greedy) == n else logits[greedy]).argmax(dim=-1).tolist()
        for b, t in zip(greedy, chosen):
            picks[b] = t
    if sampled:
        x = logits if len(sampled) == n else logits[sampled]
        temps = torch.tensor([rows[b].temperature for b in sampled], dtype=x.dtype, device=x.device)
        probs = torch.softmax(x / temps[:, None], dim=-1)
        draws = torch.tensor([torch.rand((), generator=generators[b], dtype=torch.float64).item() for b in sampled],
                             dtype=torch.float64, device=x.device)
        for b, t in zip(sampled, _inverse_cdf(probs, draws).tolist()):
            picks[b] = t
    return picks


_BLOCK = 256


def _inverse_cdf(probs: torch.Tensor, draws: torch.Tensor) -> torch.Tensor:
    """Per row, the first token whose cumulative probability exceeds ``draw`` x total mass.

    Two levels (sums of 256-token blocks, then one block) instead of a cumulative sum over the
    whole vocabulary: the same token, for a fraction of the work. Masked tokens carry no mass, so
    they are never chosen (``right=True`` skips a zero-mass prefix even when the draw is 0).
    """
    rows, width = probs.shape
    pad = (-width) % _BLOCK
    if pad:
        probs = torch.nn.functional.pad(probs, (0, pad))
    blocks = probs.view(rows, -1, _BLOCK)
    block_cdf = blocks.sum(dim=-1).double().cumsum(dim=-1)
    target = (draws * block_cdf[:, -1])[:, None]
    last_block = (block_cdf < block_cdf[:, -1:]).sum(dim=-1, keepdim=True)  # the last block with mass
    j = torch.minimum(torch.searchsorted(block_cdf, target, right=True), last_block)
    before = torch.where(j > 0, block_cdf.gather(1, (j - 1).clamp(min=0)), torch.zeros_like(target))
    inner = blocks.gather(1, j[:, :, None].expand(rows, 1, _BLOCK)).squeeze(1).double().cumsum(dim=-1)
    k = torch.searchsorted(inner, target - before, right=True).clamp(max=_BLOCK - 1)
    # A draw that lands past a block's float sum (rounding) falls back to the block's last live token.
    last_live = (inner < inner[:, -1:]).sum(dim=-1, keepdim=True).clamp(max=_BLOCK - 1)
    k = torch.minimum(k, last_live)
    return (j * _BLOCK + k).squeeze(1)
