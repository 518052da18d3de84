"""The ``hf`` engine's prefix cache: keep the KV of recent prompts, reuse their longest shared start.

Why: an agent's next turn re-sends its system prompt, the scenario and the whole visible history,
plus what happened since. Without reuse every turn recomputes all of it; on a CPU that prompt
work, not decoding, was most of a simulation's time (69k prompt tokens for 3.5k generated in the
simulation benchmark) and batching cannot shrink it. With reuse a turn computes only its new
tokens. The same mechanism covers prompts that start alike within one batch (a chat template, a
judge's rubric): the decode loop computes their common start once and stores it here.

Entries are whole prompts (token ids + per-layer keys and values, positions 0..n-1), kept in
least-recently-used order within a token budget. A stored prompt that is a prefix of a newer one
is dropped: the newer entry serves every lookup the old one could. Only plain, growing per-layer
caches are stored (not sliding windows). Reused keys were computed in a different forward pass
than a fresh prefill would use, so logits can differ from an uncached run by floating-point
noise; on a given sequence of requests the engine stays deterministic.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch

MIN_REUSE = 16  # shorter matches are not worth a separate past in the batch


@dataclass
class CachedPrefix:
    ids: torch.Tensor  # [n] token ids (CPU, int64)
    keys: list[torch.Tensor]  # per layer [kv_heads, n, head_dim]
    values: list[torch.Tensor]

    @property
    def length(self) -> int:
        return int(self.ids.shape[0])


class PrefixCache:
    """Prompt KV by token ids, bounded by ``max_tokens`` (0 disables it)."""

    def __init__(self, max_tokens: int):
        self.max_tokens = max(0, int(max_tokens))
        self._entries: OrderedDict[int, CachedPrefix] = OrderedDict()
        self._next_key = 0
        self.tokens = 0  # tokens held
        self.hits = 0
        self.reused_tokens = 0

    @property
    def enabled(self) -> bool:
        return self.max_tokens > 0

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, prompt: list[int], touch: bool = True) -> tuple[int, CachedPrefix | None]:
        """The longest cached start of ``prompt`` (leaving at least its last token to compute).

        ``touch=False`` only looks: no recency update, no hit counted.
        """
        if not self._entries or len(prompt) <= MIN_REUSE:
            return 0, None
        query = torch.tensor(prompt, dtype=torch.long)
        best, best_key = 0, None
        for key, entry in self._entries.items():
            n = min(entry.length, len(prompt) - 1)
            if n <= best:
                continue
            same = entry.ids[:n] == query[:n]
            match = n if bool(same.all()) else int(same.to(torch.int8).argmin())
            if match > best:
                best, best_key = match, key
        if best < MIN_REUSE or best_key is None:
            return 0, None
        if touch:
            self._entries.move_to_end(best_key)
            self.hits += 1
            self.reused_tokens += best
        return best, self._entries[best_key]

    def store(self, prompt: list[int], keys: list[torch.Tensor], values: list[torch.Tensor]) -> None:
        """Keep one prompt's KV (per layer [kv_heads, len(prompt), head_dim], owned by the caller)."""
        n = len(prompt)
        if not self.enabled or n < MIN_REUSE or n > self.max_tokens:
            return
        ids = torch.tensor(prompt, dtype=torch.long)
        for key, entry in list(self._entries.items()):
            if entry.length >= n and bool((entry.ids[:n] == ids).all()):
                self._entries.move_to_end(key)  # already covered by a longer entry
                return
            if entry.length < n and bool((ids[: entry.length] == entry.ids).all()):
                self._drop(key)  # the new prompt extends it
        self._entries[self._next_key] = CachedPrefix(ids, keys, values)
        self._next_key += 1
        self.tokens += n
        while self.tokens > self.max_tokens:
            self._drop(next(iter(self._entries)))

    def clear(self) -> None:
        self._entries.clear()
        self.tokens = 0

    def _drop(self, key: int) -> None:
        self.tokens -= self._entries.pop(key).length
