"""One entry point for SopriBench users, whatever their source.

``load_users(source)`` takes ``builtin`` (the repo's scenarios/sopri-mini/), ``builtin:NAME``
(another folder under scenarios/), a suite directory in localbench's format
(``<dir>/users/<id>/user.yaml`` with the user's images beside it, and ``<dir>/sandbox/``), or
``hf:NAME[:split]`` (the gated Hugging Face release, mapped by ``hf_dataset``), or the released code's
input format, ``argus-user-json-v1`` (``argus:PATH``, or detected: a ``.json`` file or a folder of them
with no ``users/<id>/user.yaml``; ``argus_input``). Every user is bound
to its folder (``User.at``) so ``User.image_path`` resolves, and every image must exist. A record
that cannot be used raises ``ScenarioError`` naming the file and the field; what loads but looks
wrong comes back as ``LoadIssue`` warnings (the codes below), which `localbench data check` counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from localbench.benchmarks.sopri import argus_input
from localbench.benchmarks.sopri.design import COHORTS
from localbench.benchmarks.sopri.image_check import image_problem
from localbench.benchmarks.sopri.images import TEXT_KINDS
from localbench.benchmarks.sopri.labels import label_issues, post_text
from localbench.benchmarks.sopri.scenario import User
from localbench.benchmarks.sopri.taxonomy import slot_of, taxonomy
from localbench import scenario_files
from localbench.scenario_files import (
    SCENARIOS_DIR,
    LoadIssue,
    ScenarioError,
    parse_names,
    read_structured,
    load_each,
    resolve_builtin,
    take,
    validation_error,
)

BUILTIN_NAME = "sopri-mini"
BUILTIN_DIR = SCENARIOS_DIR / BUILTIN_NAME
USER_FILE = "user.yaml"
FORMAT_DOC = "scenarios/sopri-mini/README.md"
# warning codes: what `localbench data check` counts
CODES = {
    "missing_slot": "the profile lacks some of the 28 attributes",
    "no_leak": "no attribute is leaked, so PES is undefined for the user",
    "carrier_missing": "a leak names a carrier that none of its cited posts has",
    "cue_missing": "an explicit place leak whose place name none of its cited posts carries",
    "empty_image_text": "a text-bearing image (receipt, ticket, ...) with no planted text",
    "no_alt": "an image without alt text (a text-only attacker is told nothing of it)",
    "d4_single_post": "a cross-post (D4) leak whose value, or its parent in the hierarchy, one cited post "
                      "carries alone: not cross-post",
    "no_cues": "a leak without cue annotations or inference chain: its label cannot be verified",
    "cue_not_found": "a cue that is not where it says: the caption span, tag, image, metadata value, timestamp or "
                     "IP region is not in its post",
    "post_without_cue": "a post the leak cites that holds none of its cues",
    "difficulty_mismatch": "a difficulty that does not follow from the cues (1: one post's text, 2: one post's "
                           "image, 3: one post's text and image, 4: more than one post)",
    "image_text_unread": "an image cue whose text OCR (tesseract) does not find in the cue's region",
    "unlabelled": "no hidden profile (an argus-user-json-v1 user without a labels file): every attacker runs, "
                  "the report lists what each inferred, and there is no PES for the user",
    "media_skipped": "an argus-user-json-v1 media entry that is not an image (a video, audio, or another type): "
                     "skipped, as the release skips it",
}
LABEL_CODES = ("no_cues", "cue_not_found", "post_without_cue", "difficulty_mismatch", "d4_single_post",
               "image_text_unread")
"""The warnings that make a label unverifiable (the shipped suite has none)."""


class LoadResult(scenario_files.LoadResult[User]):
    """Users in order (cohort, then id) and the warnings of the records they came from."""

    category = "cohort"

    @property
    def users(self) -> list[User]:
        return self.scenarios


@dataclass(frozen=True)
class Document:
    """One user record before parsing: where it is, the folder its images sit in, how to read it."""

    file: str
    folder: Path
    read: Callable[[], Any]
    line: int | None = None

    @property
    def label(self) -> str:
        return self.file


def parse_cohorts(categories: Iterable[str] | str | None) -> set[str] | None:
    return parse_names(categories, {c: c for c in COHORTS}, "cohort", ", ".join(COHORTS))


def _is_hf(source: str) -> bool:
    return source.startswith("hf:")


def suite_dir(source: str | Path) -> Path | None:
    """The suite folder a source names (None for an hf source)."""
    s = str(source)
    if _is_hf(s) or argus_input.is_argus_source(s):
        return None
    if s == "builtin" or s.startswith("builtin:"):
        return resolve_builtin(s, BUILTIN_NAME)
    p = Path(s).expanduser()
    if not p.is_dir():
        raise ScenarioError(s, None, "no such directory (a SopriBench source is 'builtin', 'builtin:NAME', a suite "
                                     "directory with users/<id>/user.yaml, or hf:NAME[:split])")
    return p


def sandbox_dir(source: str | Path) -> Path:
    """The suite's sandbox folder (gazetteer.csv, documents.jsonl): ``<suite>/sandbox`` (an argus
    source: ``sandbox/`` in its folder); an hf source, or a directory without one, uses the built-in
    suite's (the same fictional world)."""
    if argus_input.is_argus_source(source):
        p = argus_input.argus_path(source)
        d: Path | None = p if p.is_dir() else p.parent
    else:
        d = suite_dir(source)
    if d is not None and (d / "sandbox").is_dir():
        return d / "sandbox"
    return BUILTIN_DIR / "sandbox"


def documents(source: str | Path) -> tuple[list[Document], list[LoadIssue]]:
    """The user records of a source, unparsed, in path order (and files skipped: none so far)."""
    s = str(source)
    if _is_hf(s):
        from localbench.benchmarks.sopri.hf_dataset import hf_users

        return [Document(label, folder, lambda r=rec: r) for label, rec, folder in hf_users(s)], []
    if argus_input.is_argus_source(s):
        files = argus_input.user_files(argus_input.argus_path(s))
        return [Document(str(p), p.parent, lambda p=p: argus_input.read_user_file(p)) for p in files], []
    root = suite_dir(s)
    assert root is not None
    files = [p for p in sorted(root.rglob(USER_FILE))
             if not any(x.startswith((".", "_")) for x in p.relative_to(root).parts)]
    if not files:
        raise ScenarioError(s, None, f"no SopriBench users here (expected users/<id>/{USER_FILE}; see {FORMAT_DOC})")
    return [Document(str(p), p.parent, lambda p=p: read_structured(p)) for p in files], []


def _locate(message: str) -> tuple[str, str]:
    """A field for the User model's own cross-field checks, which pydantic reports without one."""
    if message.startswith("profile '"):
        return "profile", message
    if "post ids" in message:
        return "posts", message
    if "profile slot" in message:
        return "profile", message
    return "", message


def to_user(data: Any, file: str, folder: Path, line: int | None = None) -> User:
    """A mapping as a User bound to ``folder``; ScenarioError (file, field) if it does not validate, its
    cohort is unknown or an image file is missing."""
    if not isinstance(data, dict):
        raise ScenarioError(file, None, "expected a mapping of user fields", line)
    try:
        user = User.model_validate(data)
    except ValidationError as e:
        raise validation_error(e, file, line=line, locate=_locate, format_doc=FORMAT_DOC) from e
    if user.cohort not in COHORTS:
        raise ScenarioError(file, "cohort", f"unknown cohort '{user.cohort}' (expected one of {', '.join(COHORTS)})", line)
    user.at(folder)
    for i, post in enumerate(user.posts):
        for j, image in enumerate(post.images):
            path = user.image_path(image)
            if not path.is_file() and not path.is_symlink():
                raise ScenarioError(file, f"posts[{i}].images[{j}].file",
                                    f"image '{image.file}' not found (looked for {path})", line)
            problem = image_problem(path, folder)
            if problem:
                raise ScenarioError(file, f"posts[{i}].images[{j}].file", f"image {problem}", line)
    return user


def _has_carrier(user: User, post_ids: list[str], carrier: str) -> bool:
    posts = [user.post(pid) for pid in post_ids]
    if carrier.startswith("image:"):
        return any(im.file == carrier[6:] for p in posts for im in p.images)
    if carrier in ("title", "caption", "tags", "timestamp", "ip_region", "metadata"):
        return any(bool(getattr(p, carrier)) for p in posts)
    return False


def lint(user: User, file: str) -> list[LoadIssue]:
    """What loads but looks wrong (codes in CODES)."""
    out: list[LoadIssue] = []
    if not user.profile:
        return [LoadIssue(file, "profile", f"{user.id}: no labels, so no PES", code="unlabelled"),
                *_image_issues(user, file)]
    missing = [s for s in taxonomy(user.taxonomy).names if user.attribute(s) is None]
    if missing:
        out.append(LoadIssue(file, "profile", f"{user.id}: no attribute for {', '.join(missing)}", code="missing_slot"))
    if not user.leaked:
        out.append(LoadIssue(file, "profile", f"{user.id}: no leaked attribute", code="no_leak"))
    for n, a in enumerate(user.profile):
        if a.leak is None:
            continue
        where = f"profile[{n}].leak"
        for c in a.leak.carriers:
            if not _has_carrier(user, a.leak.posts, c):
                out.append(LoadIssue(file, f"{where}.carriers", f"{a.slot}: carrier '{c}' is in none of posts "
                                     f"{', '.join(a.leak.posts)}", code="carrier_missing"))
        if a.leak.type == "explicit" and a.path and a.leak.depth and slot_of(a.slot).place:  # an age range is derived
            name = a.path[a.leak.depth - 1]
            if name.lower() not in post_text(user, a.leak.posts):
                out.append(LoadIssue(file, f"{where}.posts", f"{a.slot}: '{name}' appears in none of posts "
                                     f"{', '.join(a.leak.posts)}", code="cue_missing"))
        out += label_issues(user, a, file, where)
    return out + _image_issues(user, file)


def _image_issues(user: User, file: str) -> list[LoadIssue]:
    out: list[LoadIssue] = []
    for i, p in enumerate(user.posts):
        for j, im in enumerate(p.images):
            if im.kind in TEXT_KINDS and not im.text.strip():
                out.append(LoadIssue(file, f"posts[{i}].images[{j}].text", f"{im.file}: a {im.kind} with no planted text",
                                     code="empty_image_text"))
            if not im.alt.strip():
                out.append(LoadIssue(file, f"posts[{i}].images[{j}].alt", f"{im.file}: no alt text", code="no_alt"))
    return out


def load_document(doc: Document) -> tuple[User, list[LoadIssue]]:
    data, folder, skipped = doc.read(), doc.folder, ()
    if isinstance(data, argus_input.Located):  # an argus file: its images may sit in a staging folder
        data, folder, skipped = data.data, data.folder, data.skipped
    user = to_user(data, doc.file, folder, doc.line)
    issues = [LoadIssue(doc.file, where, f"{user.id}: {why}", code="media_skipped") for where, why in skipped]
    return user, [*issues, *lint(user, doc.file)]


def load_users(source: str | Path = "builtin", categories: Iterable[str] | str | None = None,
               limit: int | None = None) -> LoadResult:
    """Users from a source, ordered by cohort then id, at most ``limit`` per cohort. ``categories``
    are cohorts. User ids must be unique within a source."""
    if limit is not None and limit < 1:
        raise ScenarioError("limit", None, f"must be at least 1, got {limit}")
    wanted = parse_cohorts(categories)
    docs, skipped = documents(source)
    loaded = load_each(docs, load_document, wanted, "cohort", what="user id")
    return take(LoadResult([], list(skipped)), loaded, COHORTS, limit)
