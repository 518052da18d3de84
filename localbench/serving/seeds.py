"""Deterministic seeds: derived from the run seed and caller keys, so a run is reproducible."""

from __future__ import annotations

import hashlib

# vLLM and torch both take a non-negative 32-bit-safe seed; keep below 2**31.
_SEED_SPACE = 2**31 - 1


def derive_seed(base: int, *keys: object) -> int:
    """A seed for one request from the run seed plus keys (scenario, level, turn, role, attempt...).

    Keys are rendered with repr() so that ``1`` and ``"1"`` give different seeds.
    """
    h = hashlib.sha256(repr((int(base),) + tuple(keys)).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") % _SEED_SPACE
