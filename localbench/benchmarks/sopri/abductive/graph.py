"""The evidence graph: what the abductive attacker knows about one user, and why.

Three kinds of node: a **post** (one per post of the user), an **evidence** node (a raw cue: its text
and where it sits — the post, the carrier, an OCR line or a crop box — or what a tool returned) and a
**hypothesis** (an attribute, a value and a status). Two kinds of edge: a **citation** post →
evidence (the cue comes from that post) and a **support** edge evidence → evidence (a tool result
derived from the cue that triggered it) or evidence → hypothesis (the hypothesis rests on it).

The graph is what makes the attacker auditable: a hypothesis is projected into the profile only
when it is admitted and a support chain post → evidence (→ evidence …) → hypothesis exists
(``grounded``). A hypothesis that cannot be settled now is suspended with a mark of the evidence it
has seen; it wakes only when new evidence arrives in its neighbourhood (evidence citing a post its
support cites, or evidence derived from its support), never on unrelated news.

``flat=True`` is the graph ablation: evidence is a flat list (no evidence → evidence edges) and
nothing is suspended (``suspend`` leaves the hypothesis unresolved).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

NodeKind = Literal["post", "evidence", "hypothesis"]
Status = Literal["active", "admitted", "unresolved", "removed", "suspended"]
EdgeKind = Literal["cites", "supports"]
STATUSES: tuple[Status, ...] = ("active", "admitted", "unresolved", "removed", "suspended")


class Node(BaseModel):
    """One node. Fields beyond ``id``/``kind``/``text`` are set by kind (``None`` where they do not apply)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    kind: NodeKind
    text: str  # post: a one-line summary; evidence: the cue; hypothesis: "attribute: value"
    seq: int = 0  # order of creation (what a suspension mark compares against)
    # evidence: where the cue sits and who found it
    post: str | None = None
    carrier: str | None = None  # title, caption, tags, timestamp, ip_region, metadata, image:<file>, tool:<name>
    line: int | None = None  # OCR line number (from 1)
    box: list[int] | None = None  # crop box [left, top, right, bottom]
    source: str | None = None  # perceive, hypothesize, tool:<name>
    # hypothesis
    attribute: str | None = None
    value: str | None = None
    status: Status | None = None
    reason: str | None = None  # why the last status change
    mark: int | None = None  # suspended: the last seq it had seen
    routes: int = 0  # tool routes taken for it


class Edge(BaseModel):
    model_config = ConfigDict(extra="forbid")

    src: str
    dst: str
    kind: EdgeKind


class GraphData(BaseModel):
    """The saved form (``payload["graph"]``)."""

    model_config = ConfigDict(extra="forbid")

    nodes: list[Node] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)
    flat: bool = False


class GraphError(ValueError):
    """A node or edge that would break the graph's typing (an edge into a post, an unknown id)."""


def norm(text: str) -> str:
    """The form two hypotheses are compared in: lower case, words only."""
    return " ".join(re.findall(r"\w+", text.lower()))


def post_node_id(post_id: str) -> str:
    return f"post:{post_id}"


class EvidenceGraph:
    """Typed nodes and edges of one user's investigation."""

    def __init__(self, flat: bool = False):
        self.flat = flat
        self.nodes: dict[str, Node] = {}
        self.edges: list[Edge] = []
        self._seq = 0
        self._n = {"evidence": 0, "hypothesis": 0}

    # -- building -----------------------------------------------------------------------------
    def _add(self, node: Node) -> Node:
        self._seq += 1
        node.seq = self._seq
        self.nodes[node.id] = node
        return node

    def _edge(self, src: str, dst: str, kind: EdgeKind) -> None:
        a, b = self.nodes.get(src), self.nodes.get(dst)
        if a is None or b is None:
            raise GraphError(f"edge {src} → {dst}: unknown node")
        ok = (kind == "cites" and a.kind == "post" and b.kind == "evidence") or \
             (kind == "supports" and a.kind == "evidence" and b.kind in ("evidence", "hypothesis"))
        if not ok:
            raise GraphError(f"a '{kind}' edge cannot join a {a.kind} to a {b.kind}")
        if kind == "supports" and b.kind == "evidence" and self.flat:
            return  # the flat ablation keeps no evidence → evidence edges
        e = Edge(src=src, dst=dst, kind=kind)
        if e not in self.edges:
            self.edges.append(e)

    def add_post(self, post_id: str, summary: str) -> str:
        nid = post_node_id(post_id)
        if nid not in self.nodes:
            self._add(Node(id=nid, kind="post", text=summary, post=post_id))
        return nid

    def add_evidence(self, text: str, *, source: str, posts: list[str] = (), carrier: str | None = None,
                     line: int | None = None, box: list[int] | None = None, derived_from: list[str] = ()) -> Node:
        """A cue: cited by ``posts`` (post ids) and/or derived from earlier evidence (``derived_from``).

        Evidence with neither would float free of every post, so it is refused."""
        posts = [p for p in dict.fromkeys(posts)]
        derived = [d for d in dict.fromkeys(derived_from) if d in self.nodes]
        if not posts and not derived:
            raise GraphError(f"evidence '{text[:40]}' cites no post and derives from no evidence")
        self._n["evidence"] += 1
        node = self._add(Node(id=f"e{self._n['evidence']}", kind="evidence", text=text, source=source,
                              post=posts[0] if posts else None, carrier=carrier, line=line, box=box))
        for p in posts:
            self._edge(post_node_id(p), node.id, "cites")
        for d in derived:
            self._edge(d, node.id, "supports")
        if self.flat and not posts:  # no derivation edge: the tool result cites its trigger's posts
            for p in {q for d in derived for q in self.posts_of(d)}:
                self._edge(post_node_id(p), node.id, "cites")
        return node

    def find_hypothesis(self, attribute: str, value: str) -> Node | None:
        key = (norm(attribute), norm(value))
        return next((n for n in self.hypotheses() if (norm(n.attribute or ""), norm(n.value or "")) == key), None)

    def add_hypothesis(self, attribute: str, value: str, support: list[str]) -> Node | None:
        """A new candidate resting on ``support`` (evidence ids); None for a duplicate of any
        hypothesis already in the graph, whatever its status, or one with no known support."""
        support = [s for s in dict.fromkeys(support) if s in self.nodes and self.nodes[s].kind == "evidence"]
        if not support or self.find_hypothesis(attribute, value) is not None or not norm(value):
            return None
        self._n["hypothesis"] += 1
        node = self._add(Node(id=f"h{self._n['hypothesis']}", kind="hypothesis", text=f"{attribute}: {value}",
                              attribute=attribute, value=value, status="active"))
        for s in support:
            self._edge(s, node.id, "supports")
        return node

    def support(self, evidence: str, hypothesis: str) -> None:
        self._edge(evidence, hypothesis, "supports")

    def set_status(self, hid: str, status: Status, reason: str = "") -> None:
        node = self.nodes[hid]
        if node.kind != "hypothesis":
            raise GraphError(f"{hid} is not a hypothesis")
        node.status, node.reason = status, reason or node.reason
        node.mark = self._seq if status == "suspended" else None

    def suspend(self, hid: str, reason: str = "") -> Status:
        """Park a hypothesis until its neighbourhood changes; the flat ablation cannot wait for a
        neighbourhood, so there it is left unresolved. Returns the status set."""
        status: Status = "unresolved" if self.flat else "suspended"
        self.set_status(hid, status, reason)
        return status

    # -- reading ------------------------------------------------------------------------------
    def hypotheses(self, status: Status | None = None) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind == "hypothesis" and (status is None or n.status == status)]

    def evidence(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind == "evidence"]

    def into(self, nid: str, kind: EdgeKind | None = None) -> list[str]:
        return [e.src for e in self.edges if e.dst == nid and (kind is None or e.kind == kind)]

    def out_of(self, nid: str, kind: EdgeKind | None = None) -> list[str]:
        return [e.dst for e in self.edges if e.src == nid and (kind is None or e.kind == kind)]

    def supporting(self, hid: str) -> list[str]:
        """Evidence ids with a support edge into ``hid``."""
        return self.into(hid, "supports")

    def ancestors(self, nid: str) -> set[str]:
        """Every node with a path of edges into ``nid``."""
        seen: set[str] = set()
        todo = [nid]
        while todo:
            for src in self.into(todo.pop()):
                if src not in seen:
                    seen.add(src)
                    todo.append(src)
        return seen

    def posts_of(self, nid: str) -> set[str]:
        """The post ids a node's support chain reaches."""
        return {self.nodes[a].post for a in self.ancestors(nid) if self.nodes[a].kind == "post"} - {None}  # type: ignore[return-value]

    def grounded(self, hid: str) -> bool:
        """Whether a chain post → evidence (→ evidence …) → hypothesis exists."""
        return any(self.nodes[a].kind == "post" for a in self.ancestors(hid)) and bool(self.supporting(hid))

    def neighbourhood(self, hid: str) -> set[str]:
        """Evidence near a hypothesis: its support, evidence derived from its support, and evidence
        citing a post its support chain reaches."""
        support = set(self.supporting(hid))
        posts = {post_node_id(p) for p in self.posts_of(hid)}
        near = set(support)
        for e in self.evidence():
            if posts & set(self.into(e.id, "cites")) or support & self.ancestors(e.id):
                near.add(e.id)
        return near

    def wake(self) -> list[str]:
        """Suspended hypotheses whose neighbourhood gained evidence since they were suspended: set
        active again and returned."""
        woken = []
        for h in self.hypotheses("suspended"):
            if any(self.nodes[e].seq > (h.mark or 0) for e in self.neighbourhood(h.id)):
                self.set_status(h.id, "active", "new neighbouring evidence")
                woken.append(h.id)
        return woken

    def projected(self) -> list[Node]:
        """The hypotheses the profile is made of: admitted and grounded, nothing else."""
        return [h for h in self.hypotheses("admitted") if self.grounded(h.id)]

    # -- saving -------------------------------------------------------------------------------
    def data(self) -> GraphData:
        return GraphData(nodes=list(self.nodes.values()), edges=list(self.edges), flat=self.flat)

    def to_json(self) -> dict[str, Any]:
        """``{"nodes": [...], "edges": [...], "flat": bool}``: what goes into ``payload["graph"]``."""
        return self.data().model_dump(mode="json")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "EvidenceGraph":
        d = GraphData.model_validate(data)
        g = cls(flat=d.flat)
        for n in sorted(d.nodes, key=lambda n: n.seq):
            g.nodes[n.id] = n
            g._seq = max(g._seq, n.seq)
            if n.kind in g._n:
                g._n[n.kind] += 1
        g.edges = list(d.edges)
        return g
