"""The longest reply a JSON schema allows, in characters: the token budget a greedy reply needs.

Why: a greedy (temperature 0) reply cut by ``max_tokens`` is asked again with more tokens, and the
second attempt decodes the same start again before it goes on (the same prompt, greedy). A judge
whose schema allows a long answer (one evidence quote per private item) then pays for its answer
one and a half times, at the end of a run, alone. Given the room its schema allows from the start,
it is decoded once. A token is at least one character of the reply for the tokenizers used here,
so the character count bounds the tokens; escapes and multi-byte characters can still exceed it,
and then the retry is still there.

The count is for compact JSON (no whitespace between tokens), as the grammars decode it. A schema
part whose length has no bound (a string without ``maxLength``, an array without ``maxItems``, an
object that admits other keys) makes the whole reply unbounded: ``None``.
"""

from __future__ import annotations

import json
from typing import Any

_NUMBER_CHARS = 24  # an integer or float as JSON text: 64-bit integers, floats with exponents


def max_reply_chars(schema: dict[str, Any]) -> int | None:
    """Characters of the longest compact JSON text ``schema`` admits; None when unbounded."""
    return _bound(schema, schema.get("$defs") or schema.get("definitions") or {}, 0)


def _bound(s: Any, defs: dict[str, Any], depth: int) -> int | None:
    if not isinstance(s, dict) or depth > 32:
        return None
    if "$ref" in s:
        name = str(s["$ref"]).rsplit("/", 1)[-1]
        return _bound(defs.get(name), defs, depth + 1)
    if "const" in s:
        return len(json.dumps(s["const"]))
    if "enum" in s:
        return max((len(json.dumps(v)) for v in s["enum"]), default=None)
    for key in ("anyOf", "oneOf"):
        if key in s:
            return _largest([_bound(b, defs, depth + 1) for b in s[key]])
    kind = s.get("type")
    if isinstance(kind, list):
        return _largest([_bound({**s, "type": k}, defs, depth + 1) for k in kind])
    if kind == "string":
        return 2 + int(s["maxLength"]) if "maxLength" in s else None
    if kind in ("integer", "number"):
        return _NUMBER_CHARS
    if kind == "boolean":
        return 5
    if kind == "null":
        return 4
    if kind == "array":
        items = _bound(s.get("items"), defs, depth + 1)
        if "maxItems" not in s or items is None:
            return None
        n = int(s["maxItems"])
        return 2 + n * items + max(0, n - 1)
    if kind == "object" or "properties" in s:
        if s.get("additionalProperties", True) is not False:
            return None
        parts = [_bound(v, defs, depth + 1) for v in (s.get("properties") or {}).values()]
        if any(p is None for p in parts):
            return None
        names = [len(json.dumps(k)) + 1 for k in (s.get("properties") or {})]  # "key":
        return 2 + sum(parts) + sum(names) + max(0, len(parts) - 1)  # type: ignore[arg-type]
    return None


def _largest(bounds: list[int | None]) -> int | None:
    return None if not bounds or any(b is None for b in bounds) else max(b for b in bounds if b is not None)
