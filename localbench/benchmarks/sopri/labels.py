"""Checking a SopriBench label against its evidence (issue 30): each leak's cues are where they say,
each cited post holds one, the difficulty follows from the cues, a cross-post (D4) label needs its
posts together, and (``read_image_cues``, in `localbench data check`) the text an image cue claims is
what tesseract reads in the cue's region.

The rule for D4 is the issue's: no single cue post's content (caption, tags, metadata, IP region,
image text, the date it was posted) names the value, or for a hierarchical attribute its parent at
the revealed depth. It is a necessary condition checked mechanically; whether two posts are truly
needed is what each leak's one-line ``chain`` lets a reader judge.
"""

from __future__ import annotations

import re

from localbench.benchmarks.sopri.ocr import OcrError, OcrReader
from localbench.benchmarks.sopri.scenario import DIFFICULTIES, TEXT_CUE_FIELDS, Attribute, LeakCue, User
from localbench.scenario_files import LoadIssue


def post_text(user: User, post_ids: list[str]) -> str:
    parts: list[str] = []
    for pid in post_ids:
        p = user.post(pid)
        parts += [p.title, p.caption, *p.tags, *p.metadata.values(), p.ip_region, *(im.text for im in p.images),
                  _date_words(p.timestamp)]
    return "\n".join(parts).lower()


def _date_words(timestamp: str) -> str:
    """A timestamp's date as a reader says it ("22 March"), so that the D4 rule sees a birthday that a
    post's date gives away."""
    import datetime as dt

    try:
        d = dt.datetime.fromisoformat(timestamp)
    except ValueError:
        return ""
    return f"{d.day} {d.strftime('%B')}"


def _cue_found(user: User, c: LeakCue) -> str | None:
    """Why cue ``c`` is not where it says, or None when it is (image text is read by OCR in ``check``)."""
    post = next((p for p in user.posts if p.id == c.post), None)
    if post is None:
        return f"no post {c.post}"
    if c.at == "caption":
        return None if c.text in post.caption else f"'{c.text}' is not in the caption of {c.post}"
    if c.at == "tags":
        return None if c.text in post.tags else f"tag '{c.text}' is not on {c.post}"
    if c.at == "image":
        image = next((im for im in post.images if im.file == c.file), None)
        if image is None:
            return f"{c.post} has no image {c.file}"
        return None if c.text in image.text else f"{c.file} does not carry '{c.text}'"
    if c.at == "metadata":
        got = post.metadata.get(c.field or "")
        return None if got == c.text else f"{c.post} metadata '{c.field}' is {got!r}, not '{c.text}'"
    got = getattr(post, c.at)
    return None if got == c.text else f"{c.post} {c.at} is '{got}', not '{c.text}'"


def difficulty_of(cues: list[LeakCue]) -> int:
    """The difficulty the cues give: 4 over several posts, else 3 (text and image), 2 (image), 1 (text)."""
    if len({c.post for c in cues}) > 1:
        return 4
    image, text = any(c.at == "image" for c in cues), any(c.at in TEXT_CUE_FIELDS for c in cues)
    return 3 if image and text else 2 if image else 1


def label_issues(user: User, a: Attribute, file: str, where: str) -> list[LoadIssue]:
    """The label checked against its cues: each cue is where it says, each cited post holds one, the
    difficulty follows from them, and the D4 rule holds."""
    assert a.leak is not None
    leak = a.leak
    out = []
    if not leak.cues or not leak.chain.strip():
        out.append(LoadIssue(file, f"{where}.cues", f"{a.slot}: no {'cues' if not leak.cues else 'inference chain'}",
                             code="no_cues"))
    for k, c in enumerate(leak.cues):
        why = _cue_found(user, c)
        if why:
            out.append(LoadIssue(file, f"{where}.cues[{k}]", f"{a.slot}: {why}", code="cue_not_found"))
    if leak.cues:
        for pid in sorted(set(leak.posts) - {c.post for c in leak.cues}):
            out.append(LoadIssue(file, f"{where}.posts", f"{a.slot}: post {pid} holds none of the cues",
                                 code="post_without_cue"))
        got = difficulty_of(leak.cues)
        if got != leak.difficulty:
            out.append(LoadIssue(file, f"{where}.difficulty", f"{a.slot}: labelled {leak.difficulty}, the cues give "
                                 f"{got} ({DIFFICULTIES[got]})", code="difficulty_mismatch"))
    if leak.difficulty == 4:
        out += _d4_alone(user, a, file, where)
    return out


def _names(text: str, phrase: str) -> bool:
    from localbench.benchmarks.sopri.exact import normalise

    n = normalise(phrase)
    return bool(n) and f" {n} " in f" {normalise(text)} "


def _d4_alone(user: User, a: Attribute, file: str, where: str) -> list[LoadIssue]:
    """The D4 rule: no single cited post may carry the leaked value (for a hierarchical attribute, the
    value at the revealed depth or its parent) in its text, tags, metadata or image text."""
    if a.path and a.leak and a.leak.depth:
        d = a.leak.depth
        phrases = [a.path[d - 1], *([a.path[d - 2]] if d >= 2 else [])]
    else:
        phrases = [a.value]
    out = []
    for pid in a.leak.posts if a.leak else []:
        text = post_text(user, [pid])
        hit = next((ph for ph in phrases if _names(text, ph)), None)
        if hit is not None:
            out.append(LoadIssue(file, f"{where}.difficulty", f"{a.slot}: labelled cross-post (D4) but post {pid} "
                                 f"alone names '{hit}'", code="d4_single_post"))
    return out


def _folded(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.casefold())


def _found(line: str, read: str) -> bool:
    """``line`` is in ``read`` (both folded), allowing tesseract's look-alike substitutions (G for 6,
    0 for 9): at most one differing character in ten, none added or dropped."""
    if line in read:
        return True
    budget = max(1, len(line) // 10)
    return any(sum(a != b for a, b in zip(line, read[i:i + len(line)])) <= budget
               for i in range(len(read) - len(line) + 1))


def read_image_cues(user: User, file: str, reader: OcrReader) -> list[LoadIssue]:
    """Each image cue's text, line by line, found by OCR in the cue's region (letters and digits
    compared, case and spacing folded, one look-alike character in ten forgiven)."""
    out = []
    for n, a in enumerate(user.profile):
        for k, c in enumerate(a.leak.cues if a.leak else []):
            if c.at != "image" or not c.file:
                continue
            path = user.image_path(next(im for p in user.posts for im in p.images if p.id == c.post and im.file == c.file))
            try:
                read = _folded(reader.read(path.read_bytes(), c.box))
            except OcrError as e:
                return [LoadIssue(file, f"profile[{n}].leak.cues[{k}]", f"image cues not read: {e}",
                                  code="image_text_unread")]
            missed = [ln for ln in c.text.splitlines() if _folded(ln) and not _found(_folded(ln), read)]
            if missed:
                out.append(LoadIssue(file, f"profile[{n}].leak.cues[{k}]",
                                     f"{a.slot}: OCR of {c.file} in {c.box or 'the whole image'} does not read "
                                     f"'{missed[0]}'", code="image_text_unread"))
    return out
