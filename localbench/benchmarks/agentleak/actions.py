"""An agent's action, as a JSON schema = the grammar its reply is decoded under.

One of: ``call_tool`` (a tool of the agent's own, with a short query and, for a lookup or a search,
the fields it asks for from an enum of the fields that tool can return: tools minimise by design), ``message`` (to a
colleague from an enum of its peers), ``remember`` / ``recall`` (a shared-memory note by key),
``write_file``, ``final_answer`` (the entry agent only) and ``wait``. Every action starts with a
``reasoning`` note, which the system logs (channel C6). Texts have a maximum length, so a reply is
bounded whatever the model does.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from localbench.serving.output import OutputSpec

REASONING_CHARS = 160
KEY_CHARS = 40
QUERY_CHARS = 80


def _variant(action: str, **props: dict[str, Any]) -> dict[str, Any]:
    properties = {"reasoning": {"type": "string", "maxLength": REASONING_CHARS},
                  "action": {"enum": [action]}, **props}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _text(n: int) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": n}


ToolFields = tuple[tuple[str, tuple[str, ...]], ...]
"""(tool name, the fields it can be asked for) of each tool; no fields for a tool that returns none."""


@lru_cache(maxsize=1024)
def action_spec(tools: ToolFields, peers: tuple[str, ...], entry: bool, text_chars: int) -> OutputSpec:
    """The action schema of one agent: its tools (each with the fields it can be asked for) and peers
    as enums; final_answer for the entry agent."""
    variants = []
    plain = [name for name, fields in tools if not fields]
    if plain:
        variants.append(_variant("call_tool", tool={"enum": plain}, query=_text(QUERY_CHARS)))
    for name, fields in tools:
        if fields:
            variants.append(_variant("call_tool", tool={"enum": [name]}, query=_text(QUERY_CHARS),
                                     fields={"type": "array", "items": {"enum": list(fields)}, "minItems": 0,
                                             "maxItems": len(fields)}))
    if peers:
        variants.append(_variant("message", to={"enum": list(peers)}, text=_text(text_chars)))
    variants += [_variant("remember", key=_text(KEY_CHARS), value=_text(text_chars)),
                 _variant("recall", key=_text(KEY_CHARS)),
                 _variant("write_file", name=_text(KEY_CHARS), content=_text(text_chars))]
    if entry:
        variants.append(_variant("final_answer", text=_text(text_chars)))
    variants.append(_variant("wait"))
    return OutputSpec.from_schema({"title": "AgentAction", "anyOf": variants}, name="agent_action")
