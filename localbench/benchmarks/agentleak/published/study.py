"""The published-traces study's README.md (studies/agentleak-published-traces/): what was reproduced
exactly, the headline numbers, the agreement and cause tables, the four-column table, two figures and
the limits, from an imported run that has been scored. `localbench import agentleak-traces PATH
--study DIR` (localbench/commands/importing.py) imports, scores, reports and then calls ``write_readme``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from localbench.benchmarks.agentleak.published.report import agreement_table, causes_table, imported_line, lead_table
from localbench.benchmarks.agentleak.published.causes import by_reason, group_causes
from localbench.benchmarks.agentleak.published.tables import agreement, four_columns, pct
from localbench.report.data import load_run
from localbench.runlog import RunPaths

COMMAND = ("localbench import agentleak-traces ../shared/datasets/agentleak/published_traces/traces.jsonl.gz "
           "--run-id agentleak-published --study studies/agentleak-published-traces")
QUANTITIES = ("C1", "C2", "C5", "single", "multi", "H1")


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def figures(run, out: Path) -> list[str]:
    """Channel rates by model under (b) and (c); (b) vs (c) for every published number."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = run.scenarios or []
    models = sorted({r.model for r in recs})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, d, title in ((axes[0], "b", "(b) upstream flags"), (axes[1], "c", "(c) localbench, stated definition")):
        width = 0.8 / len(models)
        for i, m in enumerate(models):
            rs = [r for r in recs if r.model == m]
            vals = [100 * sum(r.metrics.get(f"{q}:{d}") == 1.0 for r in rs) / len(rs) for q in ("C1", "C2", "C5")]
            ax.bar([j + i * width for j in range(3)], vals, width, label=m.split("/")[-1])
        ax.set_xticks([j + 0.4 - width / 2 for j in range(3)], ["C1", "C2", "C5"])
        ax.set_title(title)
        ax.set_ylabel("% of traces")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "channel_rates_by_model.png", dpi=110)
    plt.close(fig)
    comp = [c for c in four_columns(recs) if c.n]
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter([100 * c.cols["b"].estimate for c in comp], [100 * c.cols["c"].estimate for c in comp], s=12)
    ax.plot([0, 100], [0, 100], lw=0.8, color="grey")
    ax.set_xlabel("(b) upstream flags, %")
    ax.set_ylabel("(c) localbench, stated definition, %")
    ax.set_title("Each published number: (b) vs (c)")
    fig.tight_layout()
    fig.savefig(out / "b_vs_c.png", dpi=110)
    plt.close(fig)
    return ["channel_rates_by_model.png", "b_vs_c.png"]


def headline(run) -> list[str]:
    comp = {c.paper.id: c for c in four_columns(run.scenarios or [])}
    lines = []
    for key in ("channel C1", "channel C2", "channel C5", "single", "multi", "H1", "ASR F4"):
        c = comp.get(key)
        if c is None or not c.n:
            continue
        lines.append(f"| {key} | {c.paper.value:g} | {pct(c.cols['b'])} | {pct(c.cols['c'])} | {pct(c.cols['d'])} |")
    return lines


def changes(run) -> list[str]:
    """The measured differences between (b) and (c), in sentences built from the run's numbers."""
    recs = run.scenarios or []
    agree = agreement(recs)
    up = sum(a.upstream_only for a in agree)
    lb = sum(a.localbench_only for a in agree)
    n = sum(a.n for a in agree)
    reasons = by_reason(group_causes(recs))
    total = sum(reasons.values()) or 1
    lines = [f"- Message by message ({n} channel messages), upstream flags {up} that localbench's (c) does not and "
             f"(c) flags {lb} that upstream does not; Cohen's κ per message kind runs from "
             f"{min(a.kappa.estimate for a in agree):.3f} to {max(a.kappa.estimate for a in agree):.3f}."]
    lines.append("- Field by field, the disagreements by cause: " + "; ".join(
        f"{d}, {r}: {k} ({100 * k / total:.1f}%)" for (d, r), k in sorted(reasons.items(), key=lambda x: -x[1])) + ".")
    comp = [c for c in four_columns(recs) if c.n]
    moved = [c for c in comp if c.mcnemar.p_value < 0.05]
    lines.append(f"- Of the {len(comp)} published numbers, {len(moved)} differ between (b) and (c) at p < 0.05 "
                 f"(McNemar on the same traces, not corrected for multiplicity); the largest change is "
                 + max((f"{c.paper.id}: {pct(c.cols['b'])} → {pct(c.cols['c'])}" for c in comp),
                       key=lambda t: 0) + "." if comp else "")
    big = max(comp, key=lambda c: abs(c.cols["c"].estimate - c.cols["b"].estimate), default=None)
    if big is not None:
        lines[-1] = (f"- Of the {len(comp)} published numbers, {len(moved)} differ between (b) and (c) at p < 0.05 "
                     f"(McNemar on the same traces, not corrected for multiplicity); the largest change is "
                     f"{big.paper.id}: {pct(big.cols['b'])} under (b), {pct(big.cols['c'])} under (c).")
    lines.append("- The short values that upstream's scope skips are, in the examples the cause table links to, the field "
                 "stated as such (an internal risk rating `F`, a credit score `402`, a department `HR`); the (d) column "
                 "shows the rates without them.")
    return lines


def write_readme(run_dir: Path, out: Path, t_import: float | None, t_score: float,
                 cpu_score: float | None = None) -> Path:
    """The study's README.md and figures in ``out``, from a scored imported run."""
    out.mkdir(parents=True, exist_ok=True)
    run = load_run(run_dir)
    comp = four_columns(run.scenarios or [])
    shown = [c for c in comp if c.n]
    exact = [c for c in shown if c.reproduced]
    off = [c for c in shown if not c.reproduced]
    figs = figures(run, out)
    lead = lead_table(run)
    agree = agreement_table(run)[0]
    causes = causes_table(run, viewer=os.path.relpath(RunPaths(run_dir).viewer_page, out))[0]
    md = [
        "# AgentLeak's published traces, reproduced and rescored",
        "",
        "Produced by one command, from the repository root:",
        "",
        f"    {COMMAND}",
        "",
        f"at commit `{_commit()}` (run directory: `{run_dir}`; "
        + (f"import {t_import:.0f} s" if t_import is not None else "imported by an earlier run of the command")
        + ", Tier 1-2 scoring of "
        f"{len(run.scenarios or [])} traces {t_score:.0f} s wall-clock on the machine it ran on; see the limits for "
        "what that machine was doing).",
        "",
        imported_line(run),
        "",
        "## What was reproduced exactly",
        "",
        f"Of the {len(shown)} published numbers the traces can produce, column (b), recomputed from the traces' own "
        f"upstream flags, equals the published value (a) at its published precision for {len(exact)}."
        + (" It differs for: " + "; ".join(f"{c.paper.id} ({c.paper.value:g} published, "
                                            f"{100 * c.cols['b'].estimate:.4g} recomputed, {c.difference:+.2f} points)"
                                            for c in off) + "." if off else ""),
        "",
        "model_stats.json's `any_leak` (which it also reports as `multi_rate`) counts the single-agent reply too: it "
        "is the quantity `any` (single-agent reply or multi-agent run) here, while paper_stats.json's `multi_agent` "
        "is `multi` (the multi-agent run's C1, C2 or C5 only).",
        "",
        "## Headline numbers",
        "",
        "| number | (a) paper | (b) upstream flags | (c) localbench, stated | (d) localbench, upstream scope |",
        "|:--|--:|--:|--:|--:|",
        *headline(run),
        "",
        "Percent of traces with Wilson 95% intervals. (c): a field of the trace's vault outside its allowed set "
        "(`allowed_set.fields`) found in the channel message by localbench's Tier 1-2 detectors (canary, the value "
        "verbatim on word boundaries, a validated identifier, normalised, base64/hex). (d): the same, with the "
        "exemptions the upstream detector applied as the flags show them (values of 3 characters or fewer, values "
        "the request contains).",
        "",
        "## What changes under a stated definition, and why",
        "",
        *changes(run),
        "",
        "The agreement table compares, message by message, upstream's flag with localbench's (c); the cause table "
        "groups every field on which they differ. A disagreement is either upstream's substring test matching inside "
        "a longer word or number (upstream only), or localbench finding a value that upstream's scope exempts or "
        "that a case-insensitive substring test cannot see (localbench only).",
        "",
        agree.to_markdown(),
        causes.to_markdown(),
        "## All four columns",
        "",
        lead.to_markdown(),
        "## Figures",
        "",
        *[f"![{f}]({f})" for f in figs],
        "",
        "## Limits",
        "",
        "- Only C1, C2 and C5 were captured upstream, in one topology (a coordinator and one worker); C5 is the "
        "harness's own copy of the first 300 characters of the worker's reply, so a C5 leak implies a C2 leak.",
        "- The harness injects no attack: the ASR rows are leak rates among traces tagged with an attack class.",
        "- The traces include upstream runs whose every LLM call failed (termination `upstream_calls_failed` in the "
        "run); upstream scores them as no leak, and so do (b), (c) and (d) here, since their messages hold no vault value.",
        f"- The scoring time above is wall-clock, load average {os.getloadavg()[0]:.1f} when the README was written "
        f"on a machine with {os.cpu_count()} cores (a load above that count means other jobs shared them)"
        + (f"; the scoring took {cpu_score:.0f} CPU-seconds (user + system, every worker process)." if cpu_score
           else "."),
        "- Tier 3 (an LLM judge) is not part of this study's numbers: it runs on a stratified sample of channel "
        "messages (`--sample N --judge PRESET`: model × vertical × channel) and is reported beside columns (b)-(d), "
        "never inside them; the paper's table numbers (VI, VIII, IX, XI, XII) could not "
        "be checked against the PDF offline: column (a) cites the abstract and the summary files released with the traces.",
        "",
    ]
    readme = out / "README.md"
    readme.write_text("\n".join(md), encoding="utf-8")
    return readme



