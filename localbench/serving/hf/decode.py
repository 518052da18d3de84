"""The hf engine's decode loop: one batch of rows, a shared KV cache, a grammar and a seed per row.

Written out instead of calling ``model.generate`` because each row needs its own grammar (so a
batch mixes schemas), its own sampling temperature and its own random stream, and its own stop.
Sampling draws one uniform number per step from the row's own ``torch.Generator`` (seeded from
the request) and inverts the row's CDF with it, so a row's tokens do not depend on which other
rows share its batch, nor on whether it runs on CPU or GPU (up to the logits' floating-point
noise). Temperature 0 is greedy. Finished rows leave the batch (and the KV cache) at once, and
waiting requests take their places between steps. A prompt that starts like an earlier one (the
same agent's previous turn, a shared system prompt, a judge's rubric) reuses that start's KV from
the prefix cache and computes only the rest; a start that rows admitted together share is computed
once. The running batch's KV lives in buffers written in place (kv_buffer).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from localbench.serving.hf.grammar import RowConstraint
from localbench.serving.hf.kv_buffer import BufferedKV
from localbench.serving.hf.prefix_cache import MIN_REUSE, CachedPrefix, PrefixCache
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


@dataclass
class DecodeStats:
    """Where the engine's time goes: prompt processing vs token-by-token decoding."""

    prefill_s: float = 0.0
    prefill_tokens: int = 0  # prompt tokens processed
    prefix_reused: int = 0  # prompt tokens not computed: their KV came from the prefix cache or a shared start
    decode_s: float = 0.0
    decode_steps: int = 0  # forward passes of the running batch
    generated: int = 0  # tokens produced (stop tokens included)

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in vars(self).items()}


Admit = Callable[[int], list[tuple[int, Row]]]
"""``admit(n)``: up to n new rows as (handle, row), [] when none are waiting."""


def decode(
    model: Any,
    admit: Admit,
    on_done: OnDone,
    *,
    max_rows: int,
    pad_id: int,
    stop_ids: set[int],
    vocab_limit: int,
    stats: DecodeStats | None = None,
    prefixes: PrefixCache | None = None,
) -> None:
    """Generate rows until none are running and none are waiting; ``on_done(handle, output)`` each.

    New rows join the running batch between steps whenever rows have left it (continuous
    batching), if the model's KV cache allows it (plain per-layer caches); otherwise a batch runs
    to its end before the next one starts. ``vocab_limit`` is the tokenizer's size: logits beyond
    it (embedding padding) are never picked. ``prefixes`` keeps prompts' KV for later requests
    that start the same way (see prefix_cache).
    """
    stats = stats if stats is not None else DecodeStats()
    batch: _Batch | None = None
    joinable = _plain_model_cache(model)  # rows can join a running batch and reuse prompt KV
    with torch.inference_mode():
        while True:
            running = batch.size if batch is not None else 0
            new = admit(max_rows - running) if (batch is None or joinable) else []
            if new:
                t0 = time.perf_counter()
                for fresh in _prefill_new(model, new, pad_id, on_done, stats, prefixes, plain=joinable):
                    if batch is None:
                        batch = fresh
                        if joinable:
                            batch.buffer(max_rows)
                    else:
                        batch.merge(fresh)
                stats.prefill_s += time.perf_counter() - t0
            if batch is None:
                if not new:
                    return
                continue
            t0 = time.perf_counter()
            stats.generated += batch.size
            batch.step(model, stop_ids, vocab_limit, on_done)
            stats.decode_s += time.perf_counter() - t0
            stats.decode_steps += 1
            if batch.size == 0:
                batch = None


class _Batch:
    """The running rows: their KV cache, attention mask, positions, grammar masks and last logits."""

    def __init__(self, handles: list[int], rows: list[Row], cache: Any, mask: torch.Tensor,
                 last_pos: torch.Tensor, logits: torch.Tensor, bitmask: torch.Tensor):
        self.handles, self.rows = handles, rows
        self.outputs = [RowOutput() for _ in rows]
        self.generators = [row_generator(r) for r in rows]
        self.cache, self.mask, self.last_pos, self.logits, self.bitmask = cache, mask, last_pos, logits, bitmask
        self.kv: BufferedKV | None = None  # set once the batch runs on in-place buffers (``buffer``)

    @property
    def size(self) -> int:
        return len(self.rows)

    @classmethod
    def prefill(cls, model: Any, rows: list[tuple[int, Row]], reuse: list[tuple[int, CachedPrefix | None]],
                bitmask: torch.Tensor, pad_id: int) -> "_Batch":
        """Run the new part of each row's prompt on top of its reused KV; one forward pass.

        Layout per row: [padding][reused KV][padding][own tail]. Position ids and the attention
        mask skip the padding, so a row's numbers do not depend on how wide the others are.
        """
        from transformers import DynamicCache

        device = next(model.parameters()).device
        n = len(rows)
        past = [r for r, _ in reuse]
        width_past = max(past)
        cache = DynamicCache(config=model.config)
        past_mask = torch.zeros((n, width_past), dtype=torch.long)
        if width_past:
            template = next(e for _, e in reuse if e is not None)
            for layer, like in enumerate(template.keys):
                shape = (n, like.shape[0], width_past, like.shape[2])
                keys = torch.zeros(shape, dtype=like.dtype, device=like.device)
                values = torch.zeros(shape, dtype=like.dtype, device=like.device)
                for b, (r, entry) in enumerate(reuse):
                    if r:
                        keys[b, :, width_past - r:] = entry.keys[layer][:, :r]
                        values[b, :, width_past - r:] = entry.values[layer][:, :r]
                cache.update(keys.to(device), values.to(device), layer)
            for b, r in enumerate(past):
                past_mask[b, width_past - r:] = 1
        tails = [row.prompt_ids[r:] for (_, row), r in zip(rows, past)]
        width = max(len(t) for t in tails)
        ids = torch.full((n, width), pad_id, dtype=torch.long)
        tail_mask = torch.zeros((n, width), dtype=torch.long)
        for b, t in enumerate(tails):
            ids[b, width - len(t):] = torch.tensor(t, dtype=torch.long)
            tail_mask[b, width - len(t):] = 1
        positions = torch.tensor(past)[:, None] + (tail_mask.cumsum(-1) - 1).clamp(min=0)
        mask = torch.cat([past_mask, tail_mask], dim=1).to(device)
        positions = positions.to(device)
        logits = _forward(model, ids.to(device), mask, positions, cache)
        return cls([h for h, _ in rows], [row for _, row in rows], cache, mask, positions[:, -1:], logits, bitmask)

    def prompt_kv(self, b: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Row b's keys and values for its prompt alone (right after prefill), copied out of the batch
        (indexing with a boolean mask already copies)."""
        live = self.mask[b].bool()
        keys = [layer.keys[b][:, live] for layer in self.cache.layers]
        values = [layer.values[b][:, live] for layer in self.cache.layers]
        return keys, values

    def buffer(self, max_rows: int) -> None:
        """Move the KV cache into in-place buffers with room for ``max_rows`` rows (see kv_buffer),
        so decode steps, rows joining and rows leaving stop copying the whole cache."""
        self.kv = BufferedKV([(layer.keys, layer.values) for layer in self.cache.layers], max_rows)
        self.cache = self.kv.cache()

    def merge(self, other: "_Batch") -> None:
        """Append another (freshly prefilled) batch's rows: KV written into free buffer rows, masks
        left-padded to a common length."""
        assert self.kv is not None, "only a buffered batch takes new rows"
        width = max(self.mask.shape[1], other.mask.shape[1])
        self.kv.add_rows([(layer.keys, layer.values) for layer in other.cache.layers])
        self.mask = torch.cat([_pad_left(self.mask, width, 1), _pad_left(other.mask, width, 1)])
        self.last_pos = torch.cat([self.last_pos, other.last_pos])
        self.logits = torch.cat([self.logits, other.logits])
        self.bitmask = torch.cat([self.bitmask, other.bitmask])
        self.handles += other.handles
        self.rows += other.rows
        self.outputs += other.outputs
        self.generators += other.generators

    def step(self, model: Any, stop_ids: set[int], vocab_limit: int, on_done: OnDone) -> None:
        """Pick every row's next token, retire finished rows, and run the next forward pass."""
        tokens = choose(self.logits, self.rows, self.generators, self.bitmask, vocab_limit)
        keep: list[int] = []
        for b, (row, out, tok) in enumerate(zip(self.rows, self.outputs, tokens)):
            reason: FinishReason | None = None
            if tok in stop_ids:
                reason = "stop"
            elif row.constraint is not None and not row.constraint.accept(tok):
                out.error = f"grammar rejected token {tok} after {len(out.token_ids)} tokens"
                reason = "error"
            else:
                out.token_ids.append(tok)
                if row.constraint is not None and row.constraint.fill(self.bitmask, b):
                    reason = "stop"  # only a stop token may follow: the reply is complete
                elif len(out.token_ids) >= row.max_tokens:
                    reason = "length"
            if reason is None:
                keep.append(b)
            else:
                out.finish_reason = reason
                on_done(self.handles[b], out)
        if len(keep) < self.size:
            keep = self._select(keep)
        if not keep:
            return
        device = self.mask.device
        step = torch.tensor([tokens[b] for b in keep], dtype=torch.long, device=device)[:, None]
        self.mask = torch.cat([self.mask, torch.ones((len(keep), 1), dtype=self.mask.dtype, device=device)], dim=1)
        self.last_pos = self.last_pos + 1
        mask = self.mask
        if self.kv is not None:  # attention reads the whole buffer; the mask picks each row's columns
            self.kv.reserve(1)
            mask = self.kv.attention_mask(self.mask)
        self.logits = _forward(model, step, mask, self.last_pos, self.cache)
        if self.kv is not None:
            self.kv.advance(1)

    def _select(self, keep: list[int]) -> list[int]:
        """Keep only some rows, then drop the padding columns no remaining row needs.

        A buffered batch may reorder its rows (the last ones fill the gaps): every per-row list
        and tensor follows the order the buffer reports, which is returned (old row indices).
        """
        order = keep if self.kv is None or not keep else self.kv.keep(keep)
        pick = lambda xs: [xs[b] for b in order]  # noqa: E731
        self.handles, self.rows = pick(self.handles), pick(self.rows)
        self.outputs, self.generators = pick(self.outputs), pick(self.generators)
        if not keep:
            return order
        sel = torch.tensor(order, dtype=torch.long, device=self.mask.device)
        if self.kv is None:
            self.cache.batch_select_indices(sel)
        self.mask, self.last_pos, self.bitmask = self.mask[sel], self.last_pos[sel], self.bitmask[order].contiguous()
        if self.kv is not None:
            first = int(self.mask.any(dim=0).to(torch.int8).argmax())
            if first > 0:
                self.mask = self.mask[:, first:]
                self.kv.drop_columns(first)
        return order


def _prefill_new(model: Any, new: list[tuple[int, Row]], pad_id: int, on_done: OnDone, stats: DecodeStats,
                 prefixes: PrefixCache | None, plain: bool) -> list["_Batch"]:
    """Admit new rows: finish those that need no step, reuse cached prompt starts, prefill the rest.

    With plain growing caches (``plain``), starts that several new rows share are computed once
    first (see ``_prefill_shared``), rows are prefilled in chunks of similar shape (see
    ``_chunks``), so one long prompt does not pad every short one, and each row's prompt KV goes
    into the prefix cache. Other caches (sliding windows) get one plain prefill of all rows.
    """
    bitmask = allocate_bitmask(len(new), model)
    keep: list[int] = []
    for b, (handle, row) in enumerate(new):
        if row.constraint is not None and row.constraint.fill(bitmask, b):
            on_done(handle, RowOutput(finish_reason="stop"))  # the grammar is complete when empty
        elif row.max_tokens <= 0:
            on_done(handle, RowOutput(finish_reason="length"))
        else:
            keep.append(b)
    if not keep:
        return []
    rows = [new[b] for b in keep]
    stats.prefill_tokens += sum(len(r.prompt_ids) for _, r in rows)
    cache = None
    keep_prompts = plain and prefixes is not None and prefixes.enabled
    if plain:  # without a prefix cache, shared starts still go through one that lives for this call
        cache = prefixes if keep_prompts else PrefixCache(sum(len(r.prompt_ids) for _, r in rows))
        _prefill_shared(model, [r.prompt_ids for _, r in rows], cache, pad_id)
    reuse = [cache.lookup(row.prompt_ids) if cache is not None else (0, None) for _, row in rows]
    stats.prefix_reused += sum(r for r, _ in reuse)
    batches = []
    chunks = (_chunks([len(row.prompt_ids) - r for (_, row), (r, _) in zip(rows, reuse)], [r for r, _ in reuse])
              if plain else [list(range(len(rows)))])
    for chunk in chunks:
        picked = bitmask[[keep[i] for i in chunk]].contiguous()
        batch = _Batch.prefill(model, [rows[i] for i in chunk], [reuse[i] for i in chunk], picked, pad_id)
        if keep_prompts:
            for b, row in enumerate(batch.rows):
                cache.store(row.prompt_ids, *batch.prompt_kv(b))
        batches.append(batch)
    return batches


def _prefill_shared(model: Any, prompts: list[list[int]], cache: PrefixCache, pad_id: int) -> None:
    """Compute once each start that two or more of ``prompts`` share and the cache lacks; store it.

    Rows admitted together often start alike: one chat template and rubric for every judge call,
    the same agent's system prompt at two privacy levels (which differ only in their closing
    privacy section). Shorter shared starts are computed first, so a longer one builds on them.
    """
    for head in _shared_prefixes(prompts):
        r, entry = cache.lookup(head + [-1])  # -1 matches no token: the lookup may cover all of head
        if r >= len(head):
            continue
        row = Row(prompt_ids=head, max_tokens=1)
        batch = _Batch.prefill(model, [(-1, row)], [(r, entry)], allocate_bitmask(1, model), pad_id)
        cache.store(head, *batch.prompt_kv(0))


def _shared_prefixes(prompts: list[list[int]]) -> list[list[int]]:
    """The distinct starts (of at least ``MIN_REUSE`` tokens) that each prompt shares with its
    closest other prompt, shortest first; each leaves its prompts at least one token of their own."""
    order = sorted(range(len(prompts)), key=lambda i: prompts[i])
    common = [_common_length(prompts[a], prompts[b]) for a, b in zip(order, order[1:])]
    heads: dict[tuple[int, ...], None] = {}
    for k, i in enumerate(order):
        n = max(common[k - 1] if k > 0 else 0, common[k] if k < len(common) else 0)
        n = min(n, len(prompts[i]) - 1)
        if n >= MIN_REUSE:
            heads[tuple(prompts[i][:n])] = None
    return [list(h) for h in sorted(heads, key=len)]


def _common_length(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


_PAD_SLACK = 0.25  # a chunk may pad up to this share of its real tokens (plus a little per row)


def _chunks(tails: list[int], pasts: list[int]) -> list[list[int]]:
    """Group rows (by index) into prefill chunks whose padding stays small.

    One forward pass over many rows is cheaper than many passes, until the rows differ so much in
    length that padding them to the longest costs more than it saves.
    """
    order = sorted(range(len(tails)), key=lambda i: (tails[i], pasts[i]))
    chunks: list[list[int]] = []
    current: list[int] = []
    for i in order:
        trial = current + [i]
        t, p = [tails[j] for j in trial], [pasts[j] for j in trial]
        real = sum(t) + sum(p)
        padded = len(trial) * (max(t) + max(p))
        if current and padded - real > _PAD_SLACK * real + 16 * len(trial):
            chunks.append(current)
            current = [i]
        else:
            current = trial
    if current:
        chunks.append(current)
    return chunks


def _plain_model_cache(model: Any) -> bool:
    """Whether every layer of the model's KV cache is a plain growing one (not a sliding window):
    only then can rows join a running batch, move into in-place buffers and reuse prompt KV."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    layers = DynamicCache(config=model.config).layers
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


def _pad_left(x: torch.Tensor, width: int, dim: int) -> torch.Tensor:
    """Zero-pad ``x`` on the left of ``dim`` up to ``width`` (masked positions: never attended)."""
    short = width - x.shape[dim]
    if short <= 0:
        return x
    shape = list(x.shape)
    shape[dim] = short
    return torch.cat([x.new_zeros(shape), x], dim=dim)


def row_generator(row: Row) -> torch.Generator | None:
    if row.temperature <= 0:
        return None
    g = torch.Generator(device="cpu")
    g.manual_seed(int(row.seed))
    return g


def allocate_bitmask(n: int, model: Any) -> torch.Tensor:
    import xgrammar as xgr

    return xgr.allocate_token_bitmask(n, logits_width(model))


def logits_width(model: Any) -> int:
    """Width of the model's logits (the output head's rows; its weight may be packed away, see linear)."""
    head = model.get_output_embeddings()
    return int(getattr(head, "out_features", None) or head.weight.shape[0])


def _forward(model: Any, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: Any) -> torch.Tensor:
    """Last-position logits (float32) for each row, extending the KV cache."""
    out = model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                use_cache=True, logits_to_keep=1)
    return out.logits[:, -1, :].float()


def choose(
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
