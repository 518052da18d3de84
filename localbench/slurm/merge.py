"""Merge shard run directories RUN/shards/<i>/ into RUN/, as if one machine had run the spec.

Records are keyed, so the merge is a union by key: a key found in two shards (a shard count
changed between submissions, a shard rerun by hand) is written once. Rerunning the merge adds only
what is new, so it is safe to run again after a resubmission.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localbench.errors import UserError
from localbench.runlog import JsonlStore, RunDir, RunFiles, RunPaths, run_lock
from localbench.slurm.layout import RunLayout
from localbench.spec import parse_spec

RECORD_FILES = (RunFiles.TRANSCRIPTS, RunFiles.JUDGMENTS)
_VOLATILE = {"spec", "created", "resumed"}  # differ between shards by construction


@dataclass
class MergeReport:
    """What the merge did, per record file."""

    shards: list[int]
    missing: list[int] = field(default_factory=list)
    added: dict[str, int] = field(default_factory=dict)  # file -> records appended now
    total: dict[str, int] = field(default_factory=dict)  # file -> records in the merged file
    duplicates: dict[str, int] = field(default_factory=dict)  # identical records seen in >1 shard
    conflicts: dict[str, list[str]] = field(default_factory=dict)  # keys whose records differ between shards
    provenance_differs: list[str] = field(default_factory=list)
    cache_rows: int = 0

    def summary(self) -> str:
        parts = [f"merged {len(self.shards)} shard(s)"]
        for f, n in self.total.items():
            parts.append(f"{f}: {n} records ({self.added.get(f, 0)} new)")
        if self.missing:
            parts.append(f"shards without a run directory: {self.missing}")
        for f, keys in self.conflicts.items():
            parts.append(f"{f}: {len(keys)} key(s) differ between shards, first kept: {keys[:3]}")
        if self.provenance_differs:
            parts.append(f"spec.yaml sections that differ between shards: {self.provenance_differs}")
        return "; ".join(parts)


def _read_spec_doc(path: Path) -> dict[str, Any]:
    try:
        return yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise UserError(f"{path}: cannot read: {e}") from e


def _merge_records(files: list[Path], out: Path, rep: MergeReport) -> None:
    name = out.name
    seen: dict[str, dict[str, Any]] = {}
    for f in files:
        for rec in JsonlStore(f).read():
            key = rec.get("key")
            if key is None:
                raise UserError(f"{f}: a record without a 'key' field; not a localbench record file")
            if key in seen:
                if seen[key] == rec:
                    rep.duplicates[name] = rep.duplicates.get(name, 0) + 1
                else:
                    rep.conflicts.setdefault(name, []).append(key)
                continue
            seen[key] = rec
    if not seen and not out.exists():
        return
    store = JsonlStore(out)
    added = 0
    for key in sorted(seen):  # key order: the merged file does not depend on which shard finished first
        added += store.append(seen[key])
    rep.added[name] = added
    rep.total[name] = len(store.keys())


def _merge_caches(shard_caches: list[Path], target: Path) -> int:
    """Copy the shards' response caches into the run's, so later stages replay from it."""
    if not shard_caches:
        return 0
    from localbench.serving.cache import ResponseCache

    ResponseCache(target).close()  # creates the table with the cache's own schema
    added = 0
    with sqlite3.connect(target, timeout=60) as conn:
        for i, src in enumerate(shard_caches):
            conn.execute(f"ATTACH DATABASE ? AS s{i}", (str(src),))
            before = conn.total_changes
            conn.execute(f"INSERT OR IGNORE INTO main.completions SELECT * FROM s{i}.completions")
            added += conn.total_changes - before
            conn.commit()
            conn.execute(f"DETACH DATABASE s{i}")
    return added


def merge_run(run_dir: str | Path, allow_partial: bool = False) -> MergeReport:
    """Merge every shard of the Slurm run in ``run_dir`` into it; see the module docstring."""
    layout = RunLayout(run_dir)
    rec = layout.read_record()
    if not layout.spec_file.exists():
        raise UserError(f"{layout.spec_file}: missing; was this run submitted with `localbench slurm submit`?")
    spec = parse_spec(_read_spec_doc(layout.spec_file), str(layout.spec_file), recorded=True)
    shards = list(range(rec.num_shards))
    rep = MergeReport(shards=shards)
    docs: dict[int, dict[str, Any]] = {}
    for i in shards:
        f = RunPaths(layout.shard_dir(i)).spec_file
        if f.exists():
            docs[i] = _read_spec_doc(f)
        else:
            rep.missing.append(i)
    if rep.missing and not allow_partial:
        raise UserError(
            f"{layout.run}: shard(s) {rep.missing} have no run directory (no {layout.shards}/<i>/{RunFiles.SPEC}); "
            "see `localbench slurm status`, or merge what exists with --allow-partial"
        )
    if not docs:
        raise UserError(f"{layout.run}: no shard has written anything yet")

    # the run directory itself is written below: held like any command's (shards hold their own)
    with run_lock(layout.run, command="slurm merge"):
        for name in RECORD_FILES:
            files = [layout.shard_dir(i) / name for i in docs if (layout.shard_dir(i) / name).exists()]
            _merge_records(files, layout.run / name, rep)

        # spec.yaml: the submitted spec, plus the provenance the shards recorded (which must agree).
        first = docs[min(docs)]
        provenance = {k: v for k, v in first.items() if k not in _VOLATILE}
        for i, d in docs.items():
            for k in set(provenance) | {k for k in d if k not in _VOLATILE}:
                if d.get(k) != provenance.get(k) and k not in rep.provenance_differs:
                    rep.provenance_differs.append(k)
        provenance["slurm"] = {
            "num_shards": rec.num_shards,
            "merged_shards": sorted(docs),
            "jobs": [s.model_dump(include={"array_job", "merge_job", "shards"}) for s in rec.submissions],
            **({"provenance_differs": rep.provenance_differs} if rep.provenance_differs else {}),
        }
        RunDir(layout.run).write_spec(spec, provenance, first.get("fingerprint"))

        if not spec.no_cache and spec.cache is None:
            caches = [RunPaths(layout.shard_dir(i)).cache_path for i in docs]
            rep.cache_rows = _merge_caches([c for c in caches if c.exists()], RunPaths(layout.run).cache_path)
        (layout.slurm / "merge.json").write_text(json.dumps(rep.__dict__, indent=2) + "\n")
        from localbench.slurm.usage import record_usage

        record_usage(layout.run)  # GPU-hours so far into spec.yaml (slurm.usage); the score stage updates it
    return rep
