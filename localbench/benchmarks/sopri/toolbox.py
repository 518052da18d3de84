"""The sandbox tools' one interface: every tool an attacker may call reads only the sandbox.

The sandbox is one user's posts and images plus the suite's offline files (a gazetteer, a document
index); nothing reaches a network or a real platform (docs/ethics.md). A tool declares the JSON
schema of its arguments (so an attacker's call is grammar-constrained like every other answer),
a cost (what a call spends of a route budget) and runs synchronously on CPU.

Concrete tools live in ``tools`` (OCR, crop/zoom, gazetteer, search); ``tools.build_toolbox``
assembles a ``Toolbox`` for one user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class ToolResult:
    """What a tool call gives back: text for any model, and an image (PNG bytes) for a VLM."""

    ok: bool
    text: str
    image: bytes | None = None
    error: str | None = None  # why it failed (bad arguments, unknown post), said to the attacker


class Tool(Protocol):
    name: str  # ocr, crop, gazetteer, search
    description: str  # one line, shown to the attacker
    cost: int  # route-budget units one call spends

    def args_schema(self) -> dict[str, Any]:
        """JSON schema of the call's arguments (post/image ids as enums of this user's)."""
        ...

    def run(self, args: dict[str, Any]) -> ToolResult: ...


@dataclass
class Toolbox:
    """One user's tools, by name."""

    tools: dict[str, Tool] = field(default_factory=dict)

    def call_schema(self, names: list[str] | None = None) -> dict[str, Any]:
        """A tool call as one JSON object: ``{"tool": name, "args": {...}}``, one branch per tool."""
        chosen = [self.tools[n] for n in (names or list(self.tools))]
        return {"anyOf": [{"type": "object", "additionalProperties": False, "required": ["tool", "args"],
                           "properties": {"tool": {"const": t.name}, "args": t.args_schema()}} for t in chosen]}

    def run(self, name: str, args: dict[str, Any]) -> ToolResult:
        tool = self.tools.get(name)
        if tool is None:
            return ToolResult(False, "", error=f"no tool '{name}' (tools: {', '.join(self.tools)})")
        try:
            return tool.run(args)
        except (KeyError, ValueError) as e:  # a bad argument is the attacker's mistake, said to it
            return ToolResult(False, "", error=f"{name}: {e}")

    def describe(self) -> str:
        return "\n".join(f"- {t.name} (cost {t.cost}): {t.description}" for t in self.tools.values())
