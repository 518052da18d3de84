"""The names of a run directory's files: the one place each is spelt.

A Slurm shard (RUN/shards/<i>/) and a rejudge (RUN/judges/<name>/) are run-like directories: the
same names apply there. A benchmark's own files in a run (its samples, its caches) are named by
that benchmark. ``RunPaths`` only joins paths; it creates nothing, so a reader may ask it
about a directory that does not exist.
"""

from __future__ import annotations

from pathlib import Path


class RunFiles:
    """The name of every file and folder a run directory holds."""

    SPEC = "spec.yaml"  # the resolved spec and its provenance
    PLAN = "plan.json"  # how each role was served: preset, engine, URL, memory share (``runtime.plan``)
    TRANSCRIPTS = "transcripts.jsonl"
    JUDGMENTS = "judgments.jsonl"
    SCENARIO_SCORES = "scenario_scores.jsonl"
    SCORES = "scores.json"
    SIM_ERRORS = "sim_errors.jsonl"  # simulations that raised, with their tracebacks
    CACHE = "cache.sqlite"  # the response cache
    LOCK = ".lock"  # who holds the run (``runlog.lock``)
    REPORT_MD = "report.md"
    REPORT_HTML = "report.html"
    REJUDGE = "rejudge.json"  # in RUN/judges/<name>/: who judged it, how
    VIEW_PAGE = "index.html"  # the viewer's page, in VIEW
    TABLES = "tables"
    FIGURES = "figures"
    VIEW = "view"  # the run's own viewer
    SHARDS = "shards"  # a Slurm run's shards, each a run directory
    JUDGES = "judges"  # a rejudge per judge, each a run-like directory
    SLURM = "slurm"  # what a Slurm run submitted and how its jobs ended

    VIEWER = f"{VIEW}/{VIEW_PAGE}"  # the viewer page, relative to the run

    @classmethod
    def files(cls) -> tuple[str, ...]:
        """Every file name (a name with a suffix, or a dot file)."""
        return tuple(v for k, v in vars(cls).items() if k.isupper() and "/" not in v and "." in v)

    @classmethod
    def folders(cls) -> tuple[str, ...]:
        return tuple(v for k, v in vars(cls).items() if k.isupper() and "/" not in v and "." not in v)


class RunPaths:
    """The paths of one run directory's files (nothing is created)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    @property
    def spec_file(self) -> Path:
        return self.path / RunFiles.SPEC

    @property
    def plan_path(self) -> Path:
        return self.path / RunFiles.PLAN

    @property
    def transcripts_path(self) -> Path:
        return self.path / RunFiles.TRANSCRIPTS

    @property
    def judgments_path(self) -> Path:
        return self.path / RunFiles.JUDGMENTS

    @property
    def scenario_scores_path(self) -> Path:
        return self.path / RunFiles.SCENARIO_SCORES

    @property
    def scores_path(self) -> Path:
        return self.path / RunFiles.SCORES

    @property
    def sim_errors_path(self) -> Path:
        return self.path / RunFiles.SIM_ERRORS

    @property
    def cache_path(self) -> Path:
        return self.path / RunFiles.CACHE

    @property
    def lock_path(self) -> Path:
        return self.path / RunFiles.LOCK

    @property
    def report_md(self) -> Path:
        return self.path / RunFiles.REPORT_MD

    @property
    def report_html(self) -> Path:
        return self.path / RunFiles.REPORT_HTML

    @property
    def rejudge_info(self) -> Path:
        return self.path / RunFiles.REJUDGE

    @property
    def tables_dir(self) -> Path:
        return self.path / RunFiles.TABLES

    @property
    def figures_dir(self) -> Path:
        return self.path / RunFiles.FIGURES

    @property
    def view_dir(self) -> Path:
        return self.path / RunFiles.VIEW

    @property
    def viewer_page(self) -> Path:
        return self.path / RunFiles.VIEWER

    @property
    def shards_dir(self) -> Path:
        return self.path / RunFiles.SHARDS

    def shard(self, i: int) -> Path:
        return self.shards_dir / str(i)

    @property
    def judges_dir(self) -> Path:
        return self.path / RunFiles.JUDGES

    def judge_dir(self, name: str) -> Path:
        return self.judges_dir / name

    @property
    def slurm_dir(self) -> Path:
        return self.path / RunFiles.SLURM
