"""Report of a finished run: tables (Markdown, LaTeX, CSV), figures (PNG), report.html and report.md.

A leaf: it reads the run directory's files (scores.json, spec.yaml, scenario_scores.jsonl) and
imports no engine or benchmark code. Submodules: data (loading), aggregate (pooled estimates),
tables, figures, render.
"""

from __future__ import annotations

from localbench.report.data import RunData, load_run
from localbench.report.render import Report, build_report, render_report

__all__ = ["Report", "RunData", "build_report", "load_run", "render_report"]
