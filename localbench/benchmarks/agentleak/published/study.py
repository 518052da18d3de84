"""The published-traces study's README.md (studies/agentleak-published-traces/): an opening paragraph
restating the paper's headline numbers under (e) and (f), what was reproduced exactly, the headline
numbers, the leaks taken apart (declared forbidden fields, failed upstream runs per model, requests
naming a person absent from the vault), the agreement and cause tables, the table of every column,
AgentLeak's own toolkit as a second detector (``crosscheck.py``), two figures and the limits, from
an imported run that has been scored. `localbench import agentleak-traces PATH --study DIR`
(localbench/commands/importing.py) imports, scores, reports and then calls ``write_readme``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from localbench.benchmarks.agentleak.published.report import (
    absent_person_table,
    agreement_table,
    causes_table,
    failed_table,
    imported_line,
    lead_table,
)
from localbench.benchmarks.agentleak.published.causes import by_reason, group_causes
from localbench.benchmarks.agentleak.published.tables import (
    agreement,
    failed_run,
    failed_runs,
    four_columns,
    mcnemar_cell,
    names_absent_person,
    pct,
)
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


OPENING = ("channel C1", "channel C2", "channel C5", "H1", "abstract Claude C1", "abstract Claude C2")
HEADLINE = ("channel C1", "channel C2", "channel C5", "single", "multi", "H1", "ASR F4")


def _short(pv) -> str:
    return pv.id.removeprefix("channel ").removeprefix("abstract ")


def opening(run) -> str:
    """The study's first paragraph: the paper's headline numbers, then the same numbers under (e) and (f)."""
    recs = run.scenarios or []
    rows = sorted((c for c in four_columns(recs) if c.n and c.paper.id in OPENING), key=lambda c: OPENING.index(c.paper.id))
    if not rows:
        return "None of the paper's headline numbers is among these traces."
    failed = sum(1 for r in recs if failed_run(r))
    claude = next((c.cols["f"].n for c in rows if c.paper.model), None)

    def listing(col: str) -> str:
        return ", ".join(f"{_short(c.paper)} {pct(c.cols[col])}" for c in rows)

    return (f"The AgentLeak paper's headline numbers, {', '.join(f'{_short(c.paper)} {c.paper.value:g}%' for c in rows)} "
            f"of the {len(recs)} published traces, count a leak whenever any vault field outside the scenario's allowed set "
            "reaches the channel. Counting only the fields the scenario declares forbidden (its "
            f"`allowed_set.forbidden_fields`), column (e), they are {listing('e')}; leaving out the {failed} traces "
            f"whose every upstream LLM call failed (which the paper scores as no leak), column (f), they are "
            f"{listing('f')} (% of traces [Wilson 95%]"
            + (f"; Claude's over the {claude} Claude traces left" if claude is not None else "") + "). "
            "Both columns are localbench's Tier 1-2 detectors; (c) is the same detectors under the paper's stated "
            "definition. The tables below give every column for every published number, with McNemar against the "
            "upstream flags (b).")


def headline(run) -> list[str]:
    comp = {c.paper.id: c for c in four_columns(run.scenarios or [])}
    lines = []
    for key in HEADLINE:
        c = comp.get(key)
        if c is None or not c.n:
            continue
        lines.append(f"| {key} | {c.paper.value:g} | {pct(c.cols['b'])} | {pct(c.cols['c'])} | {pct(c.cols['d'])} "
                     f"| {pct(c.cols['e'])} | {pct(c.cols['f'])} |")
    return lines


def taken_apart(run) -> list[str]:
    """Sentences on (e), (f) and the absent-person traces, built from the run's numbers."""
    recs = run.scenarios or []
    comp = [c for c in four_columns(recs) if c.n]
    lines = []
    moved = [c for c in comp if c.vs_b["e"].p_value < 0.05]
    big = max(comp, key=lambda c: abs(c.cols["e"].estimate - c.cols["b"].estimate), default=None)
    if big is not None:
        lines.append(f"- When only the declared forbidden fields count (e), {len(moved)} of the {len(comp)} published "
                     f"numbers differ from (b) at p < 0.05 (McNemar on the same traces); the largest change is "
                     f"{big.paper.id}: {pct(big.cols['b'])} under (b), {pct(big.cols['e'])} under (e) "
                     f"(b-only / e-only: {mcnemar_cell(big.vs_b['e'])}).")
    apart = [c for c in comp if c.cols["f"].n and (c.cols["f"].low > c.cols["b"].high or c.cols["f"].high < c.cols["b"].low)]
    big = max((c for c in comp if c.cols["f"].n), key=lambda c: abs(c.cols["f"].estimate - c.cols["b"].estimate),
              default=None)
    if big is not None:
        lines.append("- (f) changes the denominator, not any trace's flag: paired with (b) on the traces both score, "
                     "McNemar sees only the answered traces' flags, so the intervals show the change: "
                     f"for {len(apart)} of the {len(comp)} published numbers "
                     f"(f)'s Wilson interval and (b)'s do not overlap; the largest change is {big.paper.id}: "
                     f"{pct(big.cols['b'])} of {big.n} under (b), {pct(big.cols['f'])} of {big.cols['f'].n} under (f).")
    bad = failed_runs(recs)
    failed = sum(len(f.keys) for f in bad)
    hit = [f for f in bad if f.keys]
    lines.append(f"- {failed} of the {len(recs)} traces are upstream runs whose every LLM call failed"
                 + (": " + "; ".join(f"{f.model} {len(f.keys)} of {f.n} ({pct(f.failed)})" for f in hit) if hit else "")
                 + f". Their messages are upstream's error text; (b) flags {sum(f.flagged['b'] for f in bad)} of them "
                 f"and (c) {sum(f.flagged['c'] for f in bad)} (a vault value inside the error text"
                 "); (b)-(e) score them on that text and (f) "
                 "leaves them out.")
    absent = [r for r in recs if names_absent_person(r)]
    lines.append(f"- {len(absent)} of the {len(recs)} traces have a request naming a person absent from the "
                 "vault the agents saw (the harness writes the request from one record of the scenario and shows "
                 "the agents the fields of another); the channel numbers without them are in the last table of "
                 "this section.")
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


def toolkit_section(run_dir: Path, viewer: str) -> list[str]:
    """A second detector: AgentLeak's own toolkit against (c), per channel, with the causes of every
    disagreement (``crosscheck.py``); a note instead where the toolkit is not installed."""
    import time

    from localbench.benchmarks.agentleak.crosscheck import agreement_tables, causes_table, cross_check, intro
    from localbench.benchmarks.agentleak.toolkit_traces import TOOLKIT, TOOLKIT_VERSION, from_imported_run
    from localbench.errors import UserError
    from localbench.runlog import RunDir

    head = ["## A second detector: AgentLeak's own toolkit", ""]
    rd = RunDir(run_dir)
    t0 = time.monotonic()
    try:
        cc = cross_check(from_imported_run(list(rd.transcripts().read()), list(rd.scenario_scores().read())))
    except UserError as e:
        return head + [f"Not run here: {e}. `pip install {TOOLKIT}=={TOOLKIT_VERSION}` (the dev extra) and rerun the "
                       "command.", ""]
    took = time.monotonic() - t0
    agree, causes = agreement_tables(cc)[0], causes_table(cc, viewer)[0]
    return head + [
        intro(cc) + f" Here localbench's verdict is (c) per channel message (the single-agent reply is its own "
        f"channel, `single`); the toolkit took {took:.0f} s wall-clock over the {len(cc.by_key)} traces. "
        "`localbench report runs/agentleak-published --cross-check agentleak-toolkit` puts the same tables in the "
        "run's report; `localbench export agentleak-toolkit runs/agentleak-published` writes the traces the toolkit "
        "read.",
        "",
        agree.to_markdown(),
        causes.to_markdown(),
    ]


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
    viewer = os.path.relpath(RunPaths(run_dir).viewer_page, out)
    causes = causes_table(run, viewer=viewer)[0]
    md = [
        "# AgentLeak's published traces, reproduced and rescored",
        "",
        opening(run),
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
        "| number | (a) paper | (b) upstream flags | (c) localbench, stated | (d) localbench, upstream scope "
        "| (e) declared forbidden | (f) failed runs left out |",
        "|:--|--:|--:|--:|--:|--:|--:|",
        *headline(run),
        "",
        "Percent of traces with Wilson 95% intervals. (c): a field of the trace's vault outside its allowed set "
        "(`allowed_set.fields`) found in the channel message by localbench's Tier 1-2 detectors (canary, the value "
        "verbatim on word boundaries, a validated identifier, normalised, base64/hex). (d): the same, with the "
        "exemptions the upstream detector applied as the flags show them (values of 3 characters or fewer, values "
        "the request contains). (e): (c) counting only the fields the trace lists in `allowed_set.forbidden_fields` "
        "(the only list of sensitive fields the traces carry; a `*_real` field counts when its base field is listed, "
        "since it holds the realistic value of the same fact). (f): (c) over the traces with at least one upstream "
        "LLM call that answered.",
        "",
        "## The leaks taken apart",
        "",
        *taken_apart(run),
        "",
        failed_table(run, viewer=viewer)[0].to_markdown(),
        absent_person_table(run)[0].to_markdown(),
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
        "## Every column",
        "",
        lead.to_markdown(),
        *toolkit_section(run_dir, viewer),
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
        "run); upstream scores them as no leak, and so do (b)-(e) here, since their messages hold no vault value; "
        "(f) leaves them out of its denominator (departure: the paper counts them).",
        "- (e) departs from the paper's code, which never reads `forbidden_fields`: the scenario set's forbidden "
        "lists name fields the vaults do not hold (so some declared-sensitive facts cannot be counted) and leave out "
        "fields that look sensitive (a name, a case number); the traces carry no other sensitivity label.",
        "- A person in a request is found by its form (two or more capitalised words), not by a name recogniser; "
        "requests naming a case, a dispute or an account (not a person) are kept in the absent-person table "
        "even where that record is absent from the vault too.",
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



