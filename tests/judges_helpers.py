"""Scripted judges for the judge-reliability tests: an oracle and a judge with known error rates.

Both answer the benchmark's real privacy judge prompt: they read the "- item_k: text" lines of
the rendered rubric, so the item-key → item-id mapping of the real decoder is exercised, and they
answer in the real schema. Other judge calls get a minimal schema-valid answer.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any, Callable

from fakes import ScriptedBackend
from localbench.serving.client import StructuredClient

ITEM_LINE = re.compile(r"^- (item_\d+): (.*)$", re.M)


def minimal(schema: dict[str, Any]) -> Any:
    if "enum" in schema:
        return schema["enum"][0]
    t = schema.get("type")
    if t == "object":
        return {k: minimal(v) for k, v in schema["properties"].items()}
    if t == "boolean":
        return False
    if t == "string":
        return "none"
    if t in ("integer", "number"):
        return schema.get("minimum", 0)
    raise ValueError(f"cannot answer schema {schema}")


def privacy_items_in(request) -> dict[str, str]:
    """{item_k: item text} from a privacy judge prompt."""
    return dict(ITEM_LINE.findall(request.messages[-1]["content"]))


def scripted_judge(level_for: Callable[[Any, str, str], str], name: str = "scripted") -> StructuredClient:
    """A client whose backend answers privacy calls with ``level_for(request, item_key, item_text)``."""

    def reply(request):
        schema = request.output.schema
        if request.output.name != "privacy":
            return json.dumps(minimal(schema)), "stop"
        items = privacy_items_in(request)
        assert set(items) == set(schema["properties"]), "prompt items and schema keys must match"
        return json.dumps({k: {"evidence": "none", "level": level_for(request, k, text)}
                           for k, text in items.items()}), "stop"

    backend = ScriptedBackend(reply)
    backend.identity = type(backend.identity)(preset=name, source="test", revision="1")
    return StructuredClient(backend, cache=None)


def flip(level: str, fpr: float, fnr: float, rng: random.Random) -> str:
    """A judge with known error rates on the leak decision: none→partial w.p. FPR, leak→none w.p. FNR."""
    if level == "none":
        return "partial" if rng.random() < fpr else "none"
    return "none" if rng.random() < fnr else level


def gold_items_by_call(items, seed: int = 0, batch: bool = True):
    """``item_of(request, item_text)``: the gold item a judge call asks about under that text.

    A gold eval asks a bundle of one owner's items per call (``batch``, the default) or one item per
    call; the request's tag names the bundle or the item, and within a call every item has its own
    text, so (tag, text) finds the item.
    """
    from localbench.judging.gold_eval import bundles

    if batch:
        members = {f"bundle:{b.id}": {it.item.text: it for it in b.items} for b in bundles(list(items), seed)}
    else:
        members = {it.id: {it.item.text: it} for it in items}

    def item_of(request, text):
        return members[request.tag.split("|")[1]][text]

    return item_of
