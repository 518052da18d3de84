"""Prompt token counts remembered per backend and prompt.

A judge call is measured when it is built (to split or trim its transcript), again by the runner
just before it is sent, and by the client when its schema may need more room than ``max_tokens``;
only the first look tokenizes (or asks a server's /tokenize), the others read the count back.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from typing import Any

_COUNTS: "weakref.WeakKeyDictionary[Any, dict[bytes, int]]" = weakref.WeakKeyDictionary()


def _key(messages: list[Any]) -> bytes:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()


def _memo(backend: Any) -> dict[bytes, int] | None:
    try:
        return _COUNTS.setdefault(backend, {})
    except TypeError:  # a backend that cannot be weakly referenced: count every time
        return None


def prompt_tokens(backend: Any, messages: list[Any]) -> int:
    """``backend.count_tokens(messages)``, remembered."""
    memo = _memo(backend)
    if memo is None:
        return backend.count_tokens(messages)
    key = _key(messages)
    if key not in memo:
        memo[key] = backend.count_tokens(messages)
    return memo[key]


async def aprompt_tokens(backend: Any, messages: list[Any]) -> int:
    """``backend.acount_tokens(messages)``, remembered in the same place."""
    memo = _memo(backend)
    if memo is None:
        return await backend.acount_tokens(messages)
    key = _key(messages)
    if key not in memo:
        memo[key] = await backend.acount_tokens(messages)
    return memo[key]
