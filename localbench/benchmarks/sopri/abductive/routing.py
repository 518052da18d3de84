"""Which tool checks a hypothesis: a deterministic table for the common cues, a model for the rest.

The table reads the hypothesis' supporting evidence: a cue in a text-bearing image (a document,
receipt, ticket, badge, screenshot, notice, sign) goes to OCR; a cue in a photo of a place (a
landmark, a street, a view) goes to visual re-inspection (crop); a hypothesis about a place, or a
cue naming one, goes to the gazetteer and then to search. Arguments are filled from what the cue
says by the tool's own argument names and must validate against the tool's schema, so the table
never sends a call the model could not have made. When the table has nothing left untried, the
model chooses (``fallback_schema``: one branch per affordable tool, plus ``none``).

A route is only offered when its cost fits in what is left of the budget, so a run never spends
more than its budget, even when the most useful route would overshoot.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema

from localbench.benchmarks.sopri.abductive.graph import EvidenceGraph
from localbench.benchmarks.sopri.scenario import SLOTS, User
from localbench.benchmarks.sopri.taxonomy import RELEASE

if TYPE_CHECKING:
    from localbench.benchmarks.sopri.toolbox import Toolbox

TEXT_IMAGES = frozenset({"receipt", "ticket", "badge", "document", "screenshot", "notice", "street_sign", "sign",
                         "shop_front", "classroom",
                         "letter", "invoice", "card", "label", "menu", "poster", "id", "certificate", "boarding_pass"})
"""Image kinds that carry text: OCR reads them."""

PLACE_IMAGES = frozenset({"photo", "landmark", "street", "view", "building", "scenery", "selfie"})
"""Image kinds a place may be recognised in: a closer look (crop) may show it."""

PLACE_SLOTS = (frozenset(s.name for s in SLOTS.values() if s.hierarchical) | {"travel", "employer"}
               | {s.name for s in RELEASE.slots if s.place} | {"occupation.role"})
PLACE_WORDS = re.compile(r"\b(street|st\.|road|rd\.|avenue|district|city|province|park|station|square|tower|"
                         r"mall|campus|hospital|university|temple|church|bridge|lake|mountain|plaza)\b", re.I)

# what a tool's argument may be called -> which known value fills it
_ARG_NAMES = {
    "post": ("post", "post_id", "postid"),
    "image": ("image", "file", "image_file", "image_id", "img"),
    "query": ("query", "q", "name", "place", "text", "term", "keywords"),
    "box": ("box", "region", "bbox"),
    "zoom": ("zoom", "scale"),
}


@dataclass(frozen=True)
class Route:
    """One tool call chosen for a hypothesis, and why."""

    tool: str
    args: dict[str, Any]
    cost: int
    why: str  # table:<rule> | model
    trigger: tuple[str, ...] = ()  # evidence ids the route follows up

    @property
    def signature(self) -> str:
        return f"{self.tool}:{json.dumps(self.args, sort_keys=True)}"


@dataclass
class Budget:
    """The route budget B: total tool cost the attacker may spend on one user."""

    total: int
    spent: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def left(self) -> int:
        return self.total - self.spent

    def affords(self, cost: int) -> bool:
        return 0 <= cost <= self.left

    def spend(self, route: Route) -> None:
        if not self.affords(route.cost):
            raise ValueError(f"route {route.tool} costs {route.cost}, only {self.left} of {self.total} left")
        self.spent += route.cost
        self.history.append({"tool": route.tool, "cost": route.cost, "spent": self.spent})


def fill_args(schema: dict[str, Any], known: dict[str, Any]) -> dict[str, Any] | None:
    """The tool's arguments from ``known`` values (post, image, query, box) by the names its schema
    uses; None when a required argument has no value or the result does not validate."""
    props = schema.get("properties", {})
    args: dict[str, Any] = {}
    for name in props:
        for what, names in _ARG_NAMES.items():
            if name.lower() in names and known.get(what) is not None:
                args[name] = known[what]
                break
    if any(r not in args for r in schema.get("required", [])):
        return None
    try:
        jsonschema.validate(args, schema)
    except jsonschema.ValidationError:
        return None
    return args


def image_of(user: User, carrier: str | None) -> tuple[str, str, str] | None:
    """(post id, image id, kind) when a carrier (``image:<post id>/<n>``) names an image of a post."""
    if not carrier or not carrier.startswith("image:"):
        return None
    iid = carrier.split(":", 1)[1]
    post_id, _, n = iid.rpartition("/")
    try:
        post = user.post(post_id)
    except KeyError:
        return None
    if not n.isdigit() or not 1 <= int(n) <= len(post.images):
        return None
    return post.id, iid, post.images[int(n) - 1].kind.lower()


def table_routes(graph: EvidenceGraph, hid: str, user: User, toolbox: "Toolbox") -> list[Route]:
    """The table's routes for a hypothesis, most specific first (not yet filtered by budget or by
    what was tried)."""
    h = graph.nodes[hid]
    routes: list[Route] = []

    def offer(tool: str, why: str, trigger: tuple[str, ...], **known: Any) -> None:
        t = toolbox.tools.get(tool)
        if t is None:
            return
        args = fill_args(t.args_schema(), known)
        if args is not None:
            routes.append(Route(tool, args, int(t.cost), f"table:{why}", trigger))

    support = [graph.nodes[e] for e in graph.supporting(hid)]
    for ev in support:
        img = image_of(user, ev.carrier)
        if img is None:
            continue
        post, iid, kind = img
        if kind in TEXT_IMAGES:
            offer("ocr", "document", (ev.id,), post=post, image=iid)
        elif kind in PLACE_IMAGES and (h.attribute or "").lower() in PLACE_SLOTS:
            offer("crop", "landmark", (ev.id,), post=post, image=iid, box=ev.box or [0, 0, 1, 1], zoom=2)
    place = (h.attribute or "").lower() in PLACE_SLOTS or any(PLACE_WORDS.search(e.text) for e in support)
    if place and h.value:
        trig = tuple(e.id for e in support)
        offer("gazetteer", "place", trig, query=h.value)
        offer("search", "place", trig, query=h.value)
    return routes


NONE_BRANCH: dict[str, Any] = {"type": "object", "additionalProperties": False, "required": ["tool"],
                               "properties": {"tool": {"const": "none"}}}


def fallback_schema(toolbox: "Toolbox", names: list[str]) -> dict[str, Any]:
    """The model's route choice: a call of one of ``names`` (affordable tools), or ``{"tool": "none"}``."""
    branches = toolbox.call_schema(names)["anyOf"] if names else []
    return {"anyOf": [*branches, NONE_BRANCH]}


def affordable(toolbox: "Toolbox", budget: Budget) -> list[str]:
    return [n for n, t in toolbox.tools.items() if budget.affords(int(t.cost))]
