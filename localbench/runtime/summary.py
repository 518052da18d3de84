"""What one simulate call did, in the same terms for every benchmark (the CLI prints ``line()``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from localbench.runlog import RunPaths


@dataclass
class SimulationSummary:
    """What a simulate call did (this call only, except ``total``/``already_done``)."""

    run_dir: Path
    total: int = 0
    already_done: int = 0
    done: int = 0
    errors: int = 0  # simulations recorded with an error
    engine_errors: int = 0  # not recorded; they run again next time
    first_engine_error: str = ""  # the first of them, as the engine worded it (it names the endpoint)
    first_error: str = ""  # the first simulation recorded with an error (this call's, else an earlier one's)
    recorded_ok: int = 0  # simulations of this run (this shard) recorded without an error, earlier ones included
    recorded_failed: int = 0  # and with one
    failed_turns: int = 0
    context_cuts: int = 0
    context_exhausted: int = 0
    terminations: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0  # the simulations, from the first start to the last end
    prepare_s: float = 0.0  # the simulator's preparation before them (SopriBench: OCR of images), when any

    @property
    def transcripts(self) -> Path:
        return RunPaths(self.run_dir).transcripts_path

    @property
    def complete(self) -> bool:
        return self.already_done + self.done + self.errors == self.total

    @property
    def all_failed(self) -> bool:
        """Every simulation of the run is recorded, and every one with an error: a run with nothing to
        score, which must not end with exit status 0."""
        return self.recorded_failed > 0 and self.recorded_ok == 0 and not self.engine_errors

    def all_failed_line(self) -> str:
        return (f"all {self.recorded_failed} simulations failed, the first: {self.first_error} (every error is "
                f"in {self.transcripts} and {RunPaths(self.run_dir).sim_errors_path}; fix the cause, move the run "
                "directory aside and run again)")

    def line(self) -> str:
        ends = ", ".join(f"{k} {v}" for k, v in sorted(self.terminations.items())) or "none"
        out = (f"{self.total} simulations: {self.done} run now, {self.already_done} already done, "
               f"{self.errors} with errors; {self.failed_turns} failed turns, {self.context_cuts} context cuts, "
               f"{self.context_exhausted} context_exhausted; endings: {ends} ({self.wall_s:.1f} s)")
        if self.prepare_s >= 0.05:
            out += f"; prepared in {self.prepare_s:.1f} s before them"
        if self.engine_errors:
            out += (f"; {self.engine_errors} stopped by engine errors, first: {self.first_engine_error} "
                    "(rerun to retry; see sim_errors.jsonl)")
        return out
