"""The hf engine's in-place KV buffer (localbench.serving.hf.kv_buffer): the live region always equals the plain cache.

The reference is what transformers' DynamicCache plus the old copy-everything code produced:
rows left-padded with zeros to a common width, a step's column appended on the right. Rows
joining, leaving (with the buffer's reordering), steps past the spare room and long newcomers
that need more room on the left are all compared against it on small tensors. That decoding on
the buffer gives the same text as before is tested on the tiny model in test_hf_prefix_cache.py.
"""

from __future__ import annotations

import pytest
import torch

from localbench.serving.hf.kv_buffer import BufferedKV

HEADS, DIM, LAYERS = 2, 4, 3


def _rows(n: int, width: int, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(n, HEADS, width, DIM, generator=g), torch.randn(n, HEADS, width, DIM, generator=g))
            for _ in range(LAYERS)]


def _pad(x: torch.Tensor, width: int) -> torch.Tensor:
    return torch.cat([x.new_zeros(x.shape[0], HEADS, width - x.shape[2], DIM), x], dim=2)


def _same(kv: BufferedKV, reference: list[tuple[torch.Tensor, torch.Tensor]]) -> bool:
    return all(torch.equal(kv.view(i)[0], k) and torch.equal(kv.view(i)[1], v)
               for i, (k, v) in enumerate(reference))


def _step(kv: BufferedKV, ref: list[tuple[torch.Tensor, torch.Tensor]], seed: int):
    """One decode step through the layers' update(), as the model calls it: each returns the live
    rows over the whole buffer, contiguous, and the step's mask picks exactly the plain cache's
    columns out of it."""
    kv.reserve(1)
    mask = kv.attention_mask(torch.ones(kv.rows, kv.width + 1, dtype=torch.long))
    new, cache = _rows(kv.rows, 1, seed), kv.cache()
    for i, (k, v) in enumerate(new):
        got_k, got_v = cache.layers[i].update(k, v)
        ref[i] = (torch.cat([ref[i][0], k], dim=2), torch.cat([ref[i][1], v], dim=2))
        assert got_k.is_contiguous() and got_k.shape[2] == mask.shape[-1] > ref[i][0].shape[2]
        picked = mask[:, 0, 0] == 0  # an additive bias: 0 where attention reads
        for got, expected in ((got_k, ref[i][0]), (got_v, ref[i][1])):
            assert torch.equal(got.transpose(1, 2)[picked], expected.transpose(1, 2).reshape(-1, HEADS, DIM))
            assert torch.isfinite(got).all()  # masked columns are read too
    kv.advance(1)
    return ref


@pytest.fixture(params=["fresh memory", "stale memory"])
def memory(request, monkeypatch):
    """Buffers are allocated uninitialised: with "stale memory" every new buffer starts as NaN,
    so any column attention reads that the buffer did not write or zero shows up as NaN."""
    if request.param == "stale memory":
        allocate = BufferedKV._allocate

        def stale(like, rows, columns):
            return tuple(t.fill_(float("nan")) for t in allocate(like, rows, columns))

        monkeypatch.setattr(BufferedKV, "_allocate", staticmethod(stale))
    return request.param


def test_rows_join_step_and_leave_as_in_a_plain_cache(memory):
    first = _rows(3, 10, seed=0)
    kv = BufferedKV(first, max_rows=6, spare=4)
    ref = [(k.clone(), v.clone()) for k, v in first]
    assert kv.rows == 3 and kv.width == 10 and _same(kv, ref)
    assert kv.cache().get_seq_length() == 10 and kv.cache().get_mask_sizes(1, 0) == (11, 0)

    for s in range(6):  # past the 4 spare columns: the buffer grows and keeps its contents
        ref = _step(kv, ref, seed=10 + s)
    assert kv.width == 16 and _same(kv, ref)

    longer = _rows(2, 25, seed=1)  # longer than everything so far: room is made on the left
    kv.add_rows(longer)
    width = 25
    ref = [(torch.cat([_pad(k, width), nk]), torch.cat([_pad(v, width), nv])) for (k, v), (nk, nv) in zip(ref, longer)]
    assert kv.rows == 5 and kv.width == 25 and _same(kv, ref)

    shorter = _rows(1, 7, seed=2)
    kv.add_rows(shorter)
    ref = [(torch.cat([k, _pad(nk, width)]), torch.cat([v, _pad(nv, width)])) for (k, v), (nk, nv) in zip(ref, shorter)]
    assert _same(kv, ref)

    order = kv.keep([0, 2, 5])  # rows 1, 3 and 4 leave; row 5 fills a gap
    assert sorted(order) == [0, 2, 5] and order[0] == 0
    ref = [(k[order], v[order]) for k, v in ref]
    assert kv.rows == 3 and _same(kv, ref)

    kv.drop_columns(9)  # the remaining rows need none of the first 9 columns
    ref = [(k[:, :, 9:], v[:, :, 9:]) for k, v in ref]
    assert kv.width == 16 and _same(kv, ref)
    ref = _step(kv, ref, seed=99)
    assert _same(kv, ref)


def test_more_rows_than_the_buffer_holds_is_an_error():
    kv = BufferedKV(_rows(2, 5, seed=0), max_rows=3)
    try:
        kv.add_rows(_rows(2, 5, seed=1))
    except ValueError as e:
        assert "exceed" in str(e)
    else:
        raise AssertionError("a fourth row fit into three")
