"""An agent's action, as a JSON schema = the grammar its reply is decoded under.

One of: ``call_tool`` (a tool from an enum of the agent's own, with a short query), ``message`` (to a
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


@lru_cache(maxsize=1024)
def action_spec(tools: tuple[str, ...], peers: tuple[str, ...], entry: bool, text_chars: int) -> OutputSpec:
    """The action schema of one agent: its tools and peers as enums; final_answer for the entry agent."""
    variants = []
    if tools:
        variants.append(_variant("call_tool", tool={"enum": list(tools)}, query=_text(QUERY_CHARS)))
    if peers:
        variants.append(_variant("message", to={"enum": list(peers)}, text=_text(text_chars)))
    variants += [_variant("remember", key=_text(KEY_CHARS), value=_text(text_chars)),
                 _variant("recall", key=_text(KEY_CHARS)),
                 _variant("write_file", name=_text(KEY_CHARS), content=_text(text_chars))]
    if entry:
        variants.append(_variant("final_answer", text=_text(text_chars)))
    variants.append(_variant("wait"))
    return OutputSpec.from_schema({"title": "AgentAction", "anyOf": variants}, name="agent_action")
