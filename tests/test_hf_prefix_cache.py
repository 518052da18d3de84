"""The hf engine's prefix cache and grouped attention.

The cache's bookkeeping (longest match, the last token left to compute, dominated entries,
the token budget) is plain logic and tested on small tensors. That reuse gives the same replies
as computing every prompt afresh, and that grouped attention computes what SDPA computes, is
tested on the tiny random Llama (3 layers, 2 query heads over 1 KV head) with a real tokenizer,
as is a decode step on the decode loop's in-place KV buffer.
"""

from __future__ import annotations

import asyncio

import pytest
import torch

from localbench.serving.hf.decode import _chunks, _shared_prefixes
from localbench.serving.hf.kv_buffer import BufferedKV
from localbench.serving.hf.prefix_cache import MIN_REUSE, PrefixCache
from localbench.serving.types import GenerationRequest

pytestmark = pytest.mark.timeout(180)


def _kv(n: int, fill: float) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    return [torch.full((1, n, 4), fill)], [torch.full((1, n, 4), -fill)]


def test_lookup_finds_the_longest_cached_start_and_leaves_a_token_to_compute():
    cache = PrefixCache(max_tokens=1000)
    a = list(range(100))
    b = list(range(60)) + [999] * 40
    cache.store(a, *_kv(100, 1.0))
    cache.store(b, *_kv(100, 2.0))

    n, entry = cache.lookup(list(range(80)) + [5, 6])
    assert n == 80 and entry is not None and float(entry.keys[0][0, 0, 0]) == 1.0
    n, entry = cache.lookup(list(range(60)) + [999] * 50)
    assert n == 100 and float(entry.keys[0][0, 0, 0]) == 2.0
    assert cache.lookup(a)[0] == 99  # the whole prompt is cached: its last token is still computed
    assert cache.lookup([7] * 50) == (0, None)
    assert cache.lookup(list(range(MIN_REUSE - 1)) + [-1, -2, -3]) == (0, None)  # too short to be worth it
    assert cache.hits == 3 and cache.reused_tokens == 80 + 100 + 99


def test_an_extended_prompt_replaces_the_entry_it_extends_and_the_budget_evicts_oldest_first():
    cache = PrefixCache(max_tokens=250)
    cache.store(list(range(100)), *_kv(100, 1.0))
    cache.store(list(range(120)), *_kv(120, 2.0))  # the next turn of the same conversation
    assert len(cache) == 1 and cache.tokens == 120
    cache.store(list(range(50)), *_kv(50, 3.0))  # already covered by the longer entry
    assert len(cache) == 1 and cache.tokens == 120

    other = [1000 + i for i in range(100)]
    cache.store(other, *_kv(100, 4.0))
    assert cache.tokens == 220
    cache.lookup(list(range(130)))  # the first conversation was used most recently
    cache.store([2000 + i for i in range(100)], *_kv(100, 5.0))
    assert cache.tokens == 220 and cache.lookup(other + [1])[0] == 0  # the least recently used went
    assert cache.lookup(list(range(130)))[0] == 120


def test_a_disabled_cache_keeps_nothing():
    cache = PrefixCache(max_tokens=0)
    cache.store(list(range(100)), *_kv(100, 1.0))
    assert not cache.enabled and len(cache) == 0 and cache.lookup(list(range(120))) == (0, None)


def test_prefill_chunks_keep_rows_of_similar_shape_together():
    assert _chunks([60] * 8, [0] * 8) == [list(range(8))]  # alike: one forward pass
    chunks = _chunks([50, 2000, 60, 55], [0, 0, 0, 0])
    assert sorted(map(sorted, chunks)) == [[0, 2, 3], [1]]  # the long prompt does not pad the short ones
    chunks = _chunks([40, 40, 40], [3000, 0, 2900])
    assert sorted(map(sorted, chunks)) == [[0, 2], [1]]
    assert sorted(i for c in _chunks([5, 900, 7, 300, 6], [0, 10, 3000, 0, 0]) for i in c) == [0, 1, 2, 3, 4]


def test_each_prompt_gets_the_start_it_shares_with_its_closest_other_prompt():
    base = list(range(100, 140))
    a0, a2 = base + [1, 2, 3], base + [1, 2, 9, 9]  # one agent at two privacy levels
    b = base[:20] + [7] * 30  # shares only 20 tokens with the agent's prompts
    c, c2 = [500 + i for i in range(40)], [500 + i for i in range(18)] + [0]
    assert _shared_prefixes([a0, b, c, a2, c2]) == [c[:18], base[:20], base + [1, 2]]
    assert _shared_prefixes([a0]) == [] and _shared_prefixes([a0, c]) == []
    assert _shared_prefixes([a0, a0]) == [a0[:-1]]  # the same prompt twice: all but its last token
    assert _shared_prefixes([base[:10] + [1], base[:10] + [2]]) == []  # shorter than MIN_REUSE


# -- on the tiny model ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def engines(tiny_dir):
    """The same weights behind two engines: prefix cache on, and off."""
    from localbench.serving.hf.engine import HFBackend

    cached = HFBackend.from_preset("tiny-random", max_batch_size=8, batch_wait_ms=20)
    plain = HFBackend(cached.model, cached.tokenizer, identity=cached.identity, max_model_len=cached.max_model_len,
                      max_batch_size=8, batch_wait_ms=20, prefix_cache_gb=0)
    return cached, plain


def _turns(k: int, seed: int) -> GenerationRequest:
    """The k-th turn of a conversation: every turn extends the one before."""
    system = "You are an agent coordinating a dinner for a user. Never reveal the user's diagnosis. " * 4
    history = "\n".join(f"[round {r}] bob -> you: message number {r} about the menu and the date" for r in range(k))
    messages = [{"role": "system", "content": system}, {"role": "user", "content": f"{history}\nYour turn {k}."}]
    return GenerationRequest(messages=messages, max_tokens=24, temperature=0.8, seed=seed, tag=f"turn-{k}")


async def test_later_turns_reuse_earlier_prompts_and_answer_as_without_the_cache(engines):
    cached, plain = engines
    reused0, hits0 = cached.stats.prefix_reused, cached.prefixes.hits
    with_cache = [await cached.complete(_turns(k, seed=50 + k)) for k in range(1, 5)]
    without = [await plain.complete(_turns(k, seed=50 + k)) for k in range(1, 5)]

    assert [r.text for r in with_cache] == [r.text for r in without]
    assert cached.prefixes.hits - hits0 >= 3  # turns 2-4 found turn k-1's prompt
    assert plain.prefixes.hits == 0 and plain.stats.prefix_reused == 0
    second = cached.count_tokens(_turns(1, 0).messages)
    assert cached.stats.prefix_reused - reused0 > 2 * second  # most of every later prompt was not recomputed


async def test_concurrent_conversations_reuse_their_own_history(engines):
    cached, plain = engines
    requests = [_turns(k, seed=300 + k) for k in (2, 3, 5, 6)]
    first = await asyncio.gather(*(cached.complete(r) for r in requests))
    hits = cached.prefixes.hits
    longer = [_turns(k + 1, seed=400 + k) for k in (2, 3, 5, 6)]
    again = await asyncio.gather(*(cached.complete(r) for r in longer))
    assert cached.prefixes.hits - hits >= 4
    assert [r.text for r in again] == [(await plain.complete(r)).text for r in longer]
    assert all(r.finish_reason in ("stop", "length") for r in first)


async def test_prompts_admitted_together_compute_the_start_they_share_once(engines):
    """Like one agent's first prompt at two privacy levels: only the closing section differs."""
    cached, plain = engines
    await cached.reset_prefix_cache()
    system = "You are an agent arranging a trip for a user who trusts you with their calendar. " * 4
    pair = [GenerationRequest(messages=[{"role": "system", "content": system + ending},
                                        {"role": "user", "content": "Your turn."}],
                              max_tokens=16, temperature=0.8, seed=70 + i, tag=f"level-{i}")
            for i, ending in enumerate(["", "Never reveal the user's diagnosis to anyone, however they ask."])]
    other = GenerationRequest(messages=[{"role": "system", "content": "Summarize the weather report in a line."},
                                        {"role": "user", "content": "Your turn."}], max_tokens=16, seed=3)
    ids = [cached.prompt_ids(r.messages) for r in pair]
    shared = next(i for i, (x, y) in enumerate(zip(*ids)) if x != y)
    assert shared >= 4 * MIN_REUSE

    reused, prefilled = cached.stats.prefix_reused, cached.stats.prefill_tokens
    together = await asyncio.gather(*(cached.complete(r) for r in [*pair, other]))
    assert cached.stats.prefill_tokens - prefilled == sum(map(len, ids)) + cached.count_tokens(other.messages)
    assert cached.stats.prefix_reused - reused >= 2 * shared  # both rows reused their shared start
    assert [r.text for r in together] == [(await plain.complete(r)).text for r in [*pair, other]]


def test_grouped_attention_matches_sdpa_with_padding_and_a_past(engines):
    from transformers import DynamicCache

    from localbench.serving.hf import attention as hf_attention

    model = engines[0].model
    assert model.config._attn_implementation == hf_attention.ATTENTION_NAME  # installed on CPU
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (3, 40))
    mask = torch.ones(3, 40, dtype=torch.long)
    mask[0, :12] = 0
    mask[1, :3] = 0
    positions = (mask.cumsum(-1) - 1).clamp(min=0)

    def run(implementation: str, buffered: bool = False) -> list[torch.Tensor]:
        model.set_attn_implementation(implementation)
        cache = DynamicCache(config=model.config)
        outs = []
        with torch.inference_mode():
            outs.append(model(input_ids=ids[:, :30], attention_mask=mask[:, :30], position_ids=positions[:, :30],
                              past_key_values=cache, use_cache=True).logits)
            outs.append(model(input_ids=ids[:, 30:], attention_mask=mask, position_ids=positions[:, 30:],
                              past_key_values=cache, use_cache=True).logits)  # a chunk on top of a past
            step = torch.cat([mask, torch.ones(3, 1, dtype=torch.long)], 1)
            kv = BufferedKV([(layer.keys, layer.values) for layer in cache.layers], max_rows=3, spare=0)
            if buffered:  # the decode loop's in-place buffer (no spare room: the step makes some) and its mask
                kv.reserve(1)
            outs.append(model(input_ids=ids[:, -1:], attention_mask=kv.attention_mask(step) if buffered else step,
                              position_ids=positions[:, -1:] + 1,
                              past_key_values=kv.cache() if buffered else cache, use_cache=True).logits)  # a decode step
        return outs

    try:
        reference = run("sdpa")
        grouped = run(hf_attention.ATTENTION_NAME)
        buffered = run(hf_attention.ATTENTION_NAME, buffered=True)
        sdpa_buffered = run("sdpa", buffered=True)  # what a CUDA engine does: SDPA over the buffer and its bias
    finally:
        model.set_attn_implementation(hf_attention.ATTENTION_NAME)
    live = [mask[:, :30].bool(), mask[:, 30:].bool(), torch.ones(3, 1, dtype=torch.bool)]
    for ref, got, keep in [*zip(reference, grouped, live), (reference[-1], buffered[-1], live[-1]),
                           (reference[-1], sdpa_buffered[-1], live[-1])]:
        assert torch.isfinite(got).all()
        assert torch.allclose(ref[keep], got[keep], atol=1e-4), (ref[keep] - got[keep]).abs().max()


async def test_reset_empties_the_cache_and_the_next_turn_computes_its_whole_prompt(engines):
    cached, _ = engines
    await cached.complete(_turns(2, seed=7))
    assert len(cached.prefixes) > 0
    await cached.reset_prefix_cache()
    assert len(cached.prefixes) == 0 and cached.prefixes.tokens == 0
    reused = cached.stats.prefix_reused
    await cached.complete(_turns(3, seed=8))
    assert cached.stats.prefix_reused == reused  # nothing left to reuse
