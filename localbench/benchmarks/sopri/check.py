"""Validate every user of a source and summarise it (``localbench data check --benchmark sopri``).

Unlike ``load_users``, which stops at the first bad user, this loads each user record on its own so
one run reports every failure, and groups the warnings (``loaders.CODES``: a leak citing posts that
do not carry its cue, a label its cues do not support, an image cue OCR cannot read, ...) by field and
kind. Categories
are cohorts; "private items" are the user's leaked attributes and "people" are users.
"""

from __future__ import annotations

from localbench.benchmarks.sopri.design import COHORTS
from localbench.benchmarks.sopri.labels import read_image_cues
from localbench.benchmarks.sopri.loaders import Document, documents, load_document
from localbench.benchmarks.sopri.ocr import OcrReader
from localbench.benchmarks.sopri.scenario import User
from localbench.benchmarks.sopri.taxonomy import builtin_source
from localbench.paths import cache_dir
from localbench.scenario_files import CheckReport, LoadIssue, Tally, check_records


def tally(user: User) -> Tally:
    return Tally(user.cohort, items=len(user.leaked), people=1)


def check_source(source: str) -> CheckReport:
    """Load each user of a source independently; a duplicate user id fails the later record. Each
    image cue's text is read back by OCR (cached under the cache folder, as a run's reads are).
    ``builtin`` is the default taxonomy's suite (``builtin:sopri-mini`` checks localbench's)."""
    reader = OcrReader(folder=cache_dir() / "ocr")

    def load(doc: Document) -> tuple[User, list[LoadIssue]]:
        user, issues = load_document(doc)
        return user, [*issues, *read_image_cues(user, doc.file, reader)]

    docs, skipped = documents(builtin_source(source))
    return CheckReport(str(source), check_records(docs, load), tally, COHORTS, skipped)
