"""The running batch's KV cache in the ``hf`` engine: one buffer per layer with room to grow.

Why: transformers' ``DynamicLayer`` appends each step's keys and values with ``torch.cat``, which
copies the whole cache on every decode step, and rows leaving or joining the batch copy it again
(``index_select``, ``cat``). Measured on SmolLM2-135M at 16 rows over 2,000 cached tokens (bf16,
2 cores): about 18-33 ms of a 100 ms decode step went to the per-step copy, and 15-20 ms to each
row joining or leaving. Here a step writes its one new column in place; a row that leaves is
replaced by the last live row (one row copied); rows that join are written into free rows.

Layout per layer: ``[row capacity, kv_heads, column capacity, head_dim]``. Live rows are
``0..rows-1`` and live columns ``start..end-1``; rows are left-padded, so every row ends at
column ``end``. Attention reads the live rows over *all* columns, ``buffer[:rows]``, which is a
contiguous tensor, and a mask built here (``attention_mask``) hides every column outside a row's
own. Why not just the live columns: a view of them is strided, and PyTorch's CPU batched matmul
then copies it internally. Measured in a profile of one SmolLM2-135M decode step
(bf16, 2 cores, 8 rows over 4,930 cached tokens, 30 layers): 28 ms of batched matmuls plus 31 ms
of those copies on views, against 46 ms of batched matmuls on the whole buffer (5,400 columns).
So the spare columns are kept small, dead columns on the left are
dropped once they are many, and every column of a live row holds a finite number: columns
outside a row's own are masked (weight exactly 0), but 0 x NaN is NaN. Buffers are allocated
uninitialised, so memory is touched only for rows in use; a row's other columns are zeroed when
it is written in, and the spare columns when the buffer grows.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import CacheLayerMixin

from localbench.serving.hf.attention import bias_from_allowed

_SPARE_COLUMNS = 64  # columns added on each side beyond what is needed when the buffer grows


class BufferedKV:
    """KV buffers of all layers plus the live region. ``cache()`` is what the model is given.

    Row room grows by doubling up to ``max_rows``; column room by ``spare`` columns or a quarter
    of the live width (every column is read at every step, so little room is kept spare).
    """

    def __init__(self, layers: list[tuple[torch.Tensor, torch.Tensor]], max_rows: int, spare: int = _SPARE_COLUMNS):
        """``layers``: per layer (keys, values) [rows, kv_heads, width, head_dim], left-padded, e.g.
        a freshly prefilled ``DynamicCache``'s."""
        keys0 = layers[0][0]
        rows, width = keys0.shape[0], keys0.shape[2]
        self.max_rows = max(max_rows, rows)
        self.spare = spare
        self.rows, self.start, self.end = 0, spare + width, spare + width  # rows land at [spare, spare + width)
        self.buffers = [self._allocate(k, rows, spare + width + spare) for k, _ in layers]
        self.add_rows(layers)

    def cache(self) -> Any:
        """A transformers cache whose layers read and write these buffers (it refers to this
        object, not the other way round, so no reference cycle keeps large buffers alive)."""
        cache = DynamicCache()
        cache.layers = [_BufferLayer(self, i) for i in range(len(self.buffers))]
        cache.layer_class_to_replicate = None
        return cache

    @staticmethod
    def _allocate(like: torch.Tensor, rows: int, columns: int) -> tuple[torch.Tensor, torch.Tensor]:
        shape = (rows, like.shape[1], columns, like.shape[3])
        return (torch.empty(shape, dtype=like.dtype, device=like.device),
                torch.empty(shape, dtype=like.dtype, device=like.device))

    @property
    def row_capacity(self) -> int:
        return self.buffers[0][0].shape[0]

    @property
    def width(self) -> int:
        return self.end - self.start

    def view(self, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The live keys and values of one layer."""
        k, v = self.buffers[layer]
        return k[: self.rows, :, self.start : self.end], v[: self.rows, :, self.start : self.end]

    def attention_mask(self, live: torch.Tensor) -> torch.Tensor:
        """The 4-d mask [rows, 1, 1, column capacity] for a decode step whose new column comes after
        the live ones, from the live 2-d mask [rows, width + 1], as the additive bias the engine's
        attention takes (0 = attend; see attention)."""
        allowed = torch.zeros((self.rows, self.buffers[0][0].shape[2]), dtype=torch.bool, device=live.device)
        allowed[:, self.start : self.end + 1] = live.bool()
        return bias_from_allowed(allowed[:, None, None, :], self.buffers[0][0].dtype)

    # -- growth ------------------------------------------------------------------------------
    def reserve(self, columns: int) -> None:
        """Make room for ``columns`` more columns on the right (called before a forward pass), and
        drop the dead columns on the left (left by rows that finished) once they outnumber twice
        the spare room plus a quarter of the live width: attention reads them at every step."""
        if self.end + columns > self.buffers[0][0].shape[2] or self.start > 2 * self.spare + self.width // 4:
            self._relayout(left=self.spare, right=max(self.spare, columns, self.width // 4))

    def _relayout(self, left: int, right: int, rows: int | None = None) -> None:
        """Copy the live region into new buffers with ``left`` free columns before it, ``right``
        after, and room for ``rows`` rows (default: as now)."""
        width, rows = self.width, rows or self.row_capacity
        for i, (k, v) in enumerate(self.buffers):
            nk, nv = self._allocate(k, rows, left + width + right)
            for new, old in ((nk, k), (nv, v)):
                new[: self.rows, :, :left] = 0
                new[: self.rows, :, left : left + width] = old[: self.rows, :, self.start : self.end]
                new[: self.rows, :, left + width :] = 0
            self.buffers[i] = (nk, nv)
        self.start, self.end = left, left + width

    def advance(self, columns: int) -> None:
        """After a forward pass: the columns it wrote are live."""
        self.end += columns

    # -- rows --------------------------------------------------------------------------------
    def add_rows(self, layers: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """Append rows (per layer keys/values [n, kv_heads, width, head_dim], left-padded)."""
        n, width = layers[0][0].shape[0], layers[0][0].shape[2]
        if self.rows + n > self.max_rows:
            raise ValueError(f"{self.rows} + {n} rows exceed the buffer's {self.max_rows}")
        rows = self.row_capacity
        if self.rows + n > rows:
            rows = min(self.max_rows, max(self.rows + n, 2 * rows))
        if width > self.end or rows > self.row_capacity:  # more room on the left, or more rows
            left = max(self.start, width - self.width + self.spare)
            right = self.buffers[0][0].shape[2] - self.end
            self._relayout(left=left, right=right, rows=rows)
        new_start = min(self.start, self.end - width)
        for (k, v), (nk, nv) in zip(self.buffers, layers):
            if new_start < self.start:  # the existing rows are padded further left
                k[: self.rows, :, new_start : self.start] = 0
                v[: self.rows, :, new_start : self.start] = 0
            added = slice(self.rows, self.rows + n)
            for buffer in (k, v):  # a free row may hold anything: every column outside its own is zeroed
                buffer[added, :, : self.end - width] = 0
                buffer[added, :, self.end :] = 0
            k[added, :, self.end - width : self.end] = nk
            v[added, :, self.end - width : self.end] = nv
        self.start = new_start
        self.rows += n

    def keep(self, keep: list[int]) -> list[int]:
        """Keep only the rows ``keep`` (increasing); return the old index of each row now live, in order.

        Rows past the new end move into the gaps the others left, so at most as many rows are
        copied as left the batch.
        """
        size, kept = len(keep), set(keep)
        holes = [i for i in range(size) if i not in kept]
        movers = [i for i in keep if i >= size]
        for hole, mover in zip(holes, movers):
            for k, v in self.buffers:
                k[hole, :, self.start : self.end] = k[mover, :, self.start : self.end]
                v[hole, :, self.start : self.end] = v[mover, :, self.start : self.end]
        order = list(range(size))
        for hole, mover in zip(holes, movers):
            order[hole] = mover
        self.rows = size
        return order

    def drop_columns(self, first: int) -> None:
        """Forget the ``first`` live columns (padding no remaining row needs)."""
        self.start += first


class _BufferLayer(CacheLayerMixin):
    """What transformers calls for one layer: writes new keys in place and returns the live rows
    over all columns (so the forward pass must get ``BufferedKV.attention_mask``)."""

    is_sliding = False
    is_compileable = False
    is_initialized = True

    def __init__(self, kv: BufferedKV, index: int):  # no super().__init__: keys/values are views here
        self.kv, self.index = kv, index

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        pass

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
        kv, q = self.kv, key_states.shape[2]
        k, v = kv.buffers[self.index]
        k[: kv.rows, :, kv.end : kv.end + q] = key_states
        v[: kv.rows, :, kv.end : kv.end + q] = value_states
        return k[: kv.rows], v[: kv.rows]

    def get_seq_length(self) -> int:
        return self.kv.width

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.kv.width + query_length, 0

    def get_max_length(self) -> int:
        return -1

    @property
    def keys(self) -> torch.Tensor:
        return self.kv.view(self.index)[0]

    @property
    def values(self) -> torch.Tensor:
        return self.kv.view(self.index)[1]
