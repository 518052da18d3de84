"""A saved evidence graph drawn for audit: an HTML page (tables a reader can search) and a PNG.

Both read only the saved JSON (``payload["graph"]``), so the viewer, the report or a CLI can draw
any finished run without the attacker's code running again. The PNG lays the graph out in columns
(posts → perceived cues → tool results → hypotheses), hypotheses coloured by status, so a reader sees
at a glance which post each admitted attribute rests on.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from localbench.benchmarks.sopri.abductive.graph import EvidenceGraph

STATUS_COLOURS = {"admitted": "#2e7d32", "active": "#1565c0", "unresolved": "#f9a825", "suspended": "#8e24aa",
                  "removed": "#9e9e9e"}
KIND_COLOURS = {"post": "#455a64", "evidence": "#6d4c41"}


def _label(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def support_chains(data: dict[str, Any]) -> dict[str, list[str]]:
    """Each hypothesis id → the post ids its support chain reaches (empty: not grounded)."""
    g = EvidenceGraph.from_json(data)
    return {h.id: sorted(g.posts_of(h.id)) for h in g.hypotheses()}


def render_html(data: dict[str, Any], title: str = "evidence graph") -> str:
    """One self-contained HTML page: hypotheses (status, support, posts reached), then the evidence."""
    g = EvidenceGraph.from_json(data)
    esc = html.escape
    rows = []
    for h in sorted(g.hypotheses(), key=lambda n: (n.status != "admitted", n.seq)):
        colour = STATUS_COLOURS.get(h.status or "", "#000")
        support = ", ".join(g.supporting(h.id))
        rows.append(f"<tr><td>{esc(h.id)}</td><td style='color:{colour}'><b>{esc(h.status or '')}</b></td>"
                    f"<td>{esc(h.attribute or '')}</td><td>{esc(h.value or '')}</td><td>{esc(support)}</td>"
                    f"<td>{esc(', '.join(sorted(g.posts_of(h.id))))}</td><td>{esc(h.reason or '')}</td></tr>")
    ev_rows = []
    for e in sorted(g.evidence(), key=lambda n: n.seq):
        cites = ", ".join(s.removeprefix("post:") for s in g.into(e.id, "cites"))
        derived = ", ".join(g.into(e.id, "supports"))
        where = " ".join(str(x) for x in (e.carrier, f"line {e.line}" if e.line else None, e.box) if x)
        ev_rows.append(f"<tr><td>{esc(e.id)}</td><td>{esc(e.source or '')}</td><td>{esc(cites)}</td>"
                       f"<td>{esc(derived)}</td><td>{esc(where)}</td><td>{esc(e.text)}</td></tr>")
    head = "<tr>" + "".join(f"<th>{c}</th>" for c in ("id", "status", "attribute", "value", "support", "posts",
                                                       "reason")) + "</tr>"
    ev_head = "<tr>" + "".join(f"<th>{c}</th>" for c in ("id", "source", "cites", "derived from", "where",
                                                          "cue")) + "</tr>"
    flat = " (flat: the graph ablation)" if g.flat else ""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
            "<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
            "padding:2px 6px;text-align:left;vertical-align:top}</style></head><body>"
            f"<h1>{esc(title)}{flat}</h1><h2>Hypotheses</h2><table>{head}{''.join(rows)}</table>"
            f"<h2>Evidence</h2><table>{ev_head}{''.join(ev_rows)}</table></body></html>")


def render_png(data: dict[str, Any], out: str | Path, title: str = "evidence graph") -> Path:
    """The graph as a PNG in columns: posts, perceived cues, tool results, hypotheses."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = EvidenceGraph.from_json(data)
    cols: dict[int, list[str]] = {0: [], 1: [], 2: [], 3: []}
    for n in sorted(g.nodes.values(), key=lambda n: n.seq):
        col = {"post": 0, "hypothesis": 3}.get(n.kind, 2 if (n.source or "").startswith("tool:") else 1)
        cols[col].append(n.id)
    height = max(3.0, 0.35 * max(len(v) for v in cols.values()) + 1)
    fig, ax = plt.subplots(figsize=(14, height))
    pos: dict[str, tuple[float, float]] = {}
    for c, ids in cols.items():
        for k, nid in enumerate(ids):
            pos[nid] = (c * 3.5, -(k + 0.5) * (height - 1) / max(1, len(ids)))
    for e in g.edges:
        (x0, y0), (x1, y1) = pos[e.src], pos[e.dst]
        ax.annotate("", xy=(x1, y1), xytext=(x0 + 1.4, y0),
                    arrowprops={"arrowstyle": "->", "color": "#90a4ae" if e.kind == "cites" else "#37474f", "lw": 0.7})
    for nid, (x, y) in pos.items():
        n = g.nodes[nid]
        colour = STATUS_COLOURS.get(n.status or "", "#000") if n.kind == "hypothesis" else KIND_COLOURS[n.kind]
        text = f"{n.id} [{n.status}] {n.text}" if n.kind == "hypothesis" else f"{n.id} {n.text}"
        ax.text(x, y, _label(text), fontsize=7, color=colour, va="center",
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": colour, "lw": 0.6})
    for c, name in enumerate(("posts", "cues", "tool results", "hypotheses")):
        ax.text(c * 3.5, 0.3, name, fontsize=9, weight="bold")
    ax.set_xlim(-0.3, 14)
    ax.set_ylim(-height, 0.7)
    ax.axis("off")
    ax.set_title(title + (" (flat)" if g.flat else ""), fontsize=10)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return out
