"""What the run viewer shows of one simulation, in terms every benchmark can fill.

A benchmark's plug-in turns a transcript, its judgments and its scenario into a ``SimulationView``
(``Benchmark.view_simulation``); the viewer (``localbench.viewer``) renders any of them the same way.
So AgentLeak's seven channels or SopriBench's posts and images fit without touching the viewer:
channels, kinds and panels are plain strings and rows the benchmark chooses. A leaf.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

VIEW_VERSION = 1
LeakLevel = Literal["none", "partial", "full"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Participant(_Strict):
    id: str
    name: str
    kind: str = ""  # e.g. "agent", "person", "coordinator"
    note: str = ""  # who it acts for, its domain...


class PrivateItem(_Strict):
    """Something that must not reach certain participants."""

    id: str
    owner: str  # participant id (or name) whose information it is
    text: str
    forbidden: list[str] = Field(default_factory=list)  # participant ids that must not receive it
    note: str = ""  # e.g. sensitivity, domain, tier


class Message(_Strict):
    """One entry of the conversation as the viewer shows it."""

    index: int
    round: int = 0
    sender: str
    recipients: list[str] = Field(default_factory=list)
    channel: str = ""
    kind: str = "message"  # message, system, pass, failed, ... (the simulator's own kinds)
    content: str = ""
    images: list[str] = Field(default_factory=list)  # data: URIs or paths, shown as pictures
    note: str = ""  # a failure, a held draft...


class Label(_Strict):
    """One judge label about one unit (an item, or an item and a recipient)."""

    judge: str  # the benchmark's judge name
    item: str = ""  # private item id ("" for labels about the whole simulation)
    recipient: str = ""  # participant id, for per-recipient labels
    level: str | None = None  # none / partial / full for leakage; any short value otherwise; None when failed
    evidence: str = ""
    messages: list[int] = Field(default_factory=list)  # entry indices that carried it (highlighted)
    source: Literal["model", "rule", "failed"] = "model"
    judge_model: str = ""
    rubric_hash: str = ""
    failure: str | None = None


class Panel(_Strict):
    """A benchmark's own table for one simulation (scores, flags, posts, tool calls...)."""

    title: str
    rows: list[tuple[str, str]] = Field(default_factory=list)


class SimulationView(_Strict):
    """Everything the viewer shows of one simulation."""

    version: int = VIEW_VERSION
    key: str
    run: str = ""  # the run id it came from (set by the viewer)
    judge: str = ""  # the judge whose labels these are (set by the viewer)
    scenario: str
    title: str = ""
    category: str
    condition: str  # its value on the benchmark's condition axis
    seed_index: int = 0
    model: str = ""
    termination: str = ""
    task: str = ""
    participants: list[Participant] = Field(default_factory=list)
    items: list[PrivateItem] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)
    labels: list[Label] = Field(default_factory=list)
    panels: list[Panel] = Field(default_factory=list)
    error: str | None = None
    unlabelled: str = "not judged"  # what an item without a label shows (a benchmark that labels only leaks says so)

    # facets of the simulation list, computed from the above
    def leaked(self) -> bool | None:
        """Whether any leakage label is partial or full; None when one failed and none leaked."""
        leak = [lb for lb in self.labels if lb.item]
        if any(lb.level in ("partial", "full") for lb in leak):
            return True
        if any(lb.source == "failed" for lb in leak) or self.error:
            return None
        return False

    def facets(self, **more: Any) -> dict[str, Any]:
        """The list row: what the filters and sort keys read."""
        return {"key": self.key, "run": self.run, "judge": self.judge, "scenario": self.scenario,
                "title": self.title or self.scenario, "category": self.category, "condition": self.condition,
                "seed": self.seed_index, "model": self.model, "termination": self.termination,
                "leaked": self.leaked(), "judge_failed": any(lb.source == "failed" for lb in self.labels),
                "n_messages": sum(1 for m in self.messages if m.kind == "message"),
                "n_leaks": sum(1 for lb in self.labels if lb.item and lb.level in ("partial", "full")),
                "error": bool(self.error), **more}
