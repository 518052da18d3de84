"""The run log: a run directory's file names, its records, their stores, its lock and spec.yaml,
and the same-judge rule. No other module spells a run file's name (tests/test_runlog_names.py)."""

from localbench.runlog.judge import judge_of, recorded_judge, resume_judge, same_judge
from localbench.runlog.layout import RunFiles, RunPaths
from localbench.runlog.lock import RunLocked, run_lock
from localbench.runlog.provenance import changed_files, file_hashes, package_versions
from localbench.runlog.records import (RECORD_VERSION, Judgment, LogEntry, Record, RecordVersionError, ScenarioScore,
                                       Transcript, by_simulation)
from localbench.runlog.rundir import RunDir, RunMismatch
from localbench.runlog.store import CorruptRecord, JsonlStore, RecordStore, read_records, write_records

__all__ = ["RECORD_VERSION", "CorruptRecord", "Judgment", "JsonlStore", "LogEntry", "Record", "RecordStore",
           "RecordVersionError", "RunDir", "RunFiles", "RunLocked", "RunMismatch", "RunPaths", "ScenarioScore",
           "Transcript", "by_simulation", "changed_files", "file_hashes", "judge_of", "package_versions",
           "read_records", "recorded_judge", "resume_judge", "run_lock", "same_judge", "write_records"]
