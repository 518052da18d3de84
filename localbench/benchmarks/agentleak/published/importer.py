"""`localbench import agentleak-traces PATH`: published AgentLeak traces as an ordinary run directory.

One transcript per trace: its five channel messages as log entries (channel, sender, recipient,
content), and in its payload the model, vertical, attack class and family, scenario id, vault,
request, allowed and forbidden fields, the upstream flags (per message and per trace) as
provenance, and how many LLM calls failed (with the first failure's error). Nothing is re-simulated. spec.yaml records the source (path, SHA-256 of every file read)
and what the import found; traces that could not be used are listed with file, line and field in
import_problems.jsonl and counted in spec.yaml, never dropped silently.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localbench.benchmarks.agentleak.published.adapter import family_of_class
from localbench.benchmarks.agentleak.published.sampling import SAMPLE_FILE, STRATA, stratified_sample, write_sample
from localbench.benchmarks.agentleak.published.traces import ReadTraces, TraceProblem, UpstreamTrace, read_traces
from localbench.errors import UserError
from localbench.files import write_lines_atomic
from localbench.runlog import LogEntry, RunDir, RunPaths, Transcript, write_records
from localbench.spec import RunSpec

BENCHMARK = "agentleak-traces"
SETTING = "2-agent"  # the harness's one topology (coordinator and worker)
PROBLEMS = "import_problems.jsonl"
ERROR_CHARS = 200  # of a trace's first failed call's error, kept to say why upstream runs failed
NOT_RESIMULATED = ("No model was called: the traces' channel messages are scored as published. Not re-simulated: "
                   "the agents' replies, the single-agent run, the memory write (upstream builds C5 from the "
                   "worker's reply) and the upstream detector's flags, which are kept as provenance.")


@dataclass
class ImportSummary:
    run_dir: Path
    source: str
    records: int
    imported: int
    problems: list[TraceProblem] = field(default_factory=list)
    by_model: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        bad = f"; {len(self.problems)} not imported (each in {self.run_dir / PROBLEMS})" if self.problems else ""
        return f"imported {self.imported} of {self.records} traces from {self.source} → {self.run_dir}{bad}"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


def transcript_of(t: UpstreamTrace, file: str, line: int | None) -> Transcript:
    """One imported trace as a transcript (see the module doc)."""
    scenario = f"{t.scenario_id}@{slug(t.model)}"
    entries = [LogEntry(index=i, round=0, kind="message", sender=m.source, recipients=[m.target], channel=m.channel,
                        visibility=sorted({m.source, m.target}), content=m.content, role="agent", phase="imported",
                        meta={"upstream_has_leak": m.has_leak, "upstream_leaked_fields": m.leaked_fields,
                              "llm_call_id": m.llm_call_id})
               for i, m in enumerate(t.channel_messages)]
    calls = t.llm_calls
    payload: dict[str, Any] = {
        "imported": {"file": file, "line": line, "trace_id": t.trace_id, "timestamp": t.timestamp},
        "trace_id": t.trace_id, "scenario_id": t.scenario_id, "vertical": t.vertical,
        "attack_class": t.attack_family, "attack_family": family_of_class(t.attack_family),
        "vault": t.vault_text(), "request": t.input.request,
        "allowed_fields": list(t.input.allowed_set.fields), "forbidden_fields": list(t.input.allowed_set.forbidden_fields),
        "upstream_results": t.results.model_dump(),
        "messages": [{"channel": m.channel, "source": m.source, "target": m.target, "has_leak": m.has_leak,
                      "leaked_fields": m.leaked_fields, "llm_call_id": m.llm_call_id} for m in t.channel_messages],
        "llm_calls": len(calls), "llm_call_errors": sum(1 for c in calls if c.get("error")),
        "llm_error": next((str(c["error"])[:ERROR_CHARS] for c in calls if c.get("error")), None),
    }
    tokens = {"in": sum(int(c.get("tokens_prompt") or 0) for c in calls),
              "out": sum(int(c.get("tokens_completion") or 0) for c in calls)}
    return Transcript(key=f"{scenario}|{SETTING}|0", scenario=scenario, category=t.vertical, level=SETTING,
                      model=t.model, models={"agent": t.model},
                      termination="upstream_calls_failed" if calls and all(c.get("error") for c in calls) else "imported",
                      entries=entries, n_messages=len(entries), n_calls=len(calls), tokens=tokens,
                      finished_at=t.timestamp, payload=payload)


def import_traces(source: str | Path, out: str | Path = "runs", run_id: str | None = None,
                  sample: int | None = None, seed: int = 0) -> ImportSummary:
    """Write the run directory of the traces at ``source``; see the module doc. ``sample``: draw the
    Tier-3 sample, N channel messages stratified by model, vertical and channel (``sampling``); every
    trace is still imported and scored by Tiers 1-2."""
    read: ReadTraces = read_traces(source)
    problems = list(read.problems)
    seen: dict[str, str] = {}
    kept: list[Transcript] = []
    for file, line, t in read.traces:
        tr = transcript_of(t, file, line)
        where = f"{file}:{line}" if line is not None else file
        if tr.key in seen:
            problems.append(TraceProblem(file, line, "scenario_id", f"a second trace of scenario '{t.scenario_id}' with "
                                         f"model '{t.model}' (the first is at {seen[tr.key]}); only the first is imported"))
            continue
        seen[tr.key] = where
        kept.append(tr)
    if not kept:
        raise UserError(f"{source}: no trace could be imported; first problem: {problems[0]}" if problems
                        else f"{source}: no traces")
    hashes = {str(f): _sha256(f) for f in read.files}
    whole = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()
    rid = run_id or f"{BENCHMARK}-{whole[:10]}"
    run_dir = Path(out) / rid
    if RunPaths(run_dir).transcripts_path.exists():
        raise UserError(f"{run_dir}: already holds a run; give another --run-id or remove it")
    rd = RunDir(run_dir)
    spec = RunSpec(benchmark=BENCHMARK, scenarios=str(run_dir.resolve()), levels=[SETTING],
                   models={"agent": "imported", "judge": "rules"}, out=str(Path(out)), run_id=rid, seed=seed)
    drawn = None if sample is None else stratified_sample(kept, sample, seed)
    by_model: dict[str, int] = {}
    for tr in kept:
        by_model[tr.model] = by_model.get(tr.model, 0) + 1
    provenance = {"imported": {
        "source": str(Path(source).resolve()), "files": len(read.files), "sha256": hashes if len(hashes) <= 5 else whole,
        "sha256_of": "the file" if len(hashes) == 1 else "the JSON of every file's hash",
        "records": read.n_records, "imported": len(kept), "not_imported": len(problems),
        "sample": None if drawn is None else {"messages": len(drawn), "asked": sample, "seed": seed,
                                              "strata": STRATA, "file": SAMPLE_FILE},
        "by_model": by_model, "problems_file": PROBLEMS if problems else None,
        "not_resimulated": NOT_RESIMULATED}}
    rd.write_spec(spec, provenance, {"imported": whole[:16]})
    write_records(rd.transcripts_path, kept)
    if drawn is not None:
        write_sample(rd.path / SAMPLE_FILE, drawn)
    if problems:
        write_lines_atomic(rd.path / PROBLEMS, (json.dumps({"file": p.file, "line": p.line, "field": p.field,
                                                            "message": p.message}) for p in problems))
    return ImportSummary(run_dir, str(source), read.n_records, len(kept), problems, by_model)
