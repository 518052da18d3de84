"""SopriBench labels checked against their evidence (issue 30, item 1): the shipped suite verifies
with no unverifiable label, and each way a label can be wrong is named, with its field."""

from __future__ import annotations

import random
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from localbench.benchmarks.sopri.captions import SentenceLedger, sentences, variants
from localbench.benchmarks.sopri.check import check_source
from localbench.benchmarks.sopri.images import render_scene
from localbench.benchmarks.sopri.labels import difficulty_of
from localbench.benchmarks.sopri.loaders import BUILTIN_DIR, LABEL_CODES, lint, load_users
from localbench.benchmarks.sopri.scenario import LeakCue
from localbench.benchmarks.sopri.suite_plan import MONTHS


@pytest.fixture(scope="module")
def suite_check():
    return check_source("builtin")


def test_every_label_of_the_shipped_suite_is_verified(suite_check):
    """Every cue is where it says (image text read back by tesseract in its region), every difficulty
    follows from its cues, every D4 label passes the D4 rule: no warning at all."""
    assert not suite_check.failed
    assert [(i.field, i.code, i.message) for i in suite_check.issues] == []
    users = [f.scenario for f in suite_check.loaded]
    leaks = [a.leak for u in users for a in u.leaked]
    assert len(leaks) >= 100 and all(leak.cues and leak.chain for leak in leaks)
    assert {leak.difficulty for leak in leaks} == {1, 2, 3, 4}
    assert sum(leak.difficulty == 4 for leak in leaks) >= 8
    assert any(c.at == "image" and c.box for leak in leaks for c in leak.cues)


def test_no_caption_sentence_is_shared_between_users():
    owners: dict[str, set[str]] = defaultdict(set)
    for u in load_users("builtin").users:
        for p in u.posts:
            for s in sentences(p.caption):
                owners[s].add(u.id)
    assert len(owners) > 100
    assert {s: sorted(us) for s, us in owners.items() if len(us) > 1} == {}


def test_wordings_and_the_ledger():
    assert variants("[A|B] cat [sat|slept].") == ["A cat sat.", "A cat slept.", "B cat sat.", "B cat slept."]
    assert variants("No choice here.") == ["No choice here."]
    ledger, rng = SentenceLedger(), random.Random(0)
    first = ledger.pick(rng, ["One. Two.", "Three."], "u1")
    second = ledger.pick(rng, ["One. Two.", "Three."], "u2")
    assert {first, second} == {"One. Two.", "Three."} and ledger.reused == 0
    ledger.pick(rng, ["Three."], "u3")  # every wording taken by another user: counted
    assert ledger.reused == 1
    assert ledger.pick(rng, ["Three."], "u2") == "Three." and ledger.reused == 1  # a user may repeat itself


def test_difficulty_follows_from_the_cues():
    def cue(post, at):
        return LeakCue(post=post, at=at, text="x", file="a.png" if at == "image" else None,
                       field="k" if at == "metadata" else None)

    assert difficulty_of([cue("p1", "caption"), cue("p1", "metadata")]) == 1
    assert difficulty_of([cue("p1", "image")]) == 2
    assert difficulty_of([cue("p1", "image"), cue("p1", "caption")]) == 3
    assert difficulty_of([cue("p1", "caption"), cue("p2", "timestamp")]) == 4


@pytest.fixture
def suite_copy(tmp_path) -> Path:
    dst = tmp_path / "suite"
    shutil.copytree(BUILTIN_DIR, dst)
    return dst


def _user_file(suite: Path, uid: str = "u01") -> Path:
    return suite / "users" / uid / "user.yaml"


def _edit(suite: Path, change, uid: str = "u01") -> dict:
    f = _user_file(suite, uid)
    data = yaml.safe_load(f.read_text())
    change(data)
    f.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return data


def _leak(data: dict, pred) -> tuple[int, dict]:
    return next((n, a) for n, a in enumerate(data["profile"]) if a.get("leak") and pred(a["leak"]))


def _codes(suite: Path, uid: str = "u01") -> list[tuple[str, str, str]]:
    user = load_users(str(suite)).users
    u = next(x for x in user if x.id == uid)
    return [(i.code, i.field, i.message) for i in lint(u, "f") if i.code in LABEL_CODES]


def test_a_caption_span_that_is_not_in_the_caption_is_named(suite_copy):
    def change(data):
        _, a = _leak(data, lambda leak: any(c["at"] == "caption" for c in leak["cues"]))
        next(c for c in a["leak"]["cues"] if c["at"] == "caption")["text"] = "a sentence nobody posted"

    _edit(suite_copy, change)
    (code, field, message), = _codes(suite_copy)
    assert code == "cue_not_found" and ".leak.cues[" in field and "a sentence nobody posted" in message


def test_a_difficulty_the_cues_do_not_give_is_named(suite_copy):
    def change(data):
        _, a = _leak(data, lambda leak: leak["difficulty"] == 1)
        a["leak"]["difficulty"] = 3
        a["leak"]["type"] = "implicit"

    _edit(suite_copy, change)
    (code, field, message), = _codes(suite_copy)
    assert code == "difficulty_mismatch" and field.endswith(".leak.difficulty") and "labelled 3, the cues give 1" in message


def test_a_d4_label_one_post_suffices_for_is_named(suite_copy):
    picked = {}

    def change(data):
        n, a = _leak(data, lambda leak: leak["difficulty"] == 4)
        pid = a["leak"]["cues"][0]["post"]
        post = next(p for p in data["posts"] if p["id"] == pid)
        post["caption"] += f" By the way: {a['value']}."
        for c in a["leak"]["cues"]:  # the cue's span is still in the caption: only the D4 rule fails
            if c["post"] == pid and c["at"] == "caption":
                c["text"] = post["caption"]
        picked.update(slot=a["slot"], post=pid)

    _edit(suite_copy, change)
    got = _codes(suite_copy)
    assert [c for c, _, _ in got] == ["d4_single_post"], got
    assert picked["slot"] in got[0][2] and f"post {picked['post']} alone" in got[0][2]


def test_a_label_without_cues_and_a_cited_post_without_cue_are_named(suite_copy):
    def change(data):
        _, a = _leak(data, lambda leak: leak["difficulty"] == 1)
        a["leak"]["cues"] = []
        _, b = _leak(data, lambda leak: leak["difficulty"] == 2)
        spare = next(p["id"] for p in data["posts"] if p["id"] not in b["leak"]["posts"])
        b["leak"]["posts"].append(spare)

    _edit(suite_copy, change)
    codes = sorted(c for c, _, _ in _codes(suite_copy))
    assert codes == ["no_cues", "post_without_cue"]


def test_an_image_that_does_not_show_its_cue_text_is_named_by_ocr(suite_copy):
    data = yaml.safe_load(_user_file(suite_copy).read_text())
    n, a = _leak(data, lambda leak: any(c["at"] == "image" for c in leak["cues"]))
    k, c = next((k, c) for k, c in enumerate(a["leak"]["cues"]) if c["at"] == "image")
    (_user_file(suite_copy).parent / c["file"]).write_bytes(render_scene("photo", [], seed=3).png)
    rep = check_source(str(suite_copy))
    unread = [i for i in rep.issues if i.code == "image_text_unread"]
    assert [(i.file.endswith("u01/user.yaml"), i.field) for i in unread] == [(True, f"profile[{n}].leak.cues[{k}]")]
    assert c["file"] in unread[0].message


def test_ocr_look_alikes_are_forgiven_and_nothing_more():
    from localbench.benchmarks.sopri.labels import _found

    assert _found("tofu400g", "ketobarsx12tofu4006")  # G read as 6: one character in eight
    assert not _found("tofu400g", "ketobarsx12tofu4x0x6")  # a character added
    assert not _found("atlastower", "atlasbridge")


def test_a_d4_birthday_post_dated_in_the_birth_month_is_named(suite_copy):
    """The D4 rule reads a hierarchical value's parent too: a cue post dated in the birth month names the
    month (the coarse level of birthday) and so gives part of the answer alone."""
    uid, slot = next((u.id, a.slot) for u in load_users(str(suite_copy)).users for a in u.leaked
                     if a.slot == "birthday" and a.leak.difficulty == 4)
    picked = {}

    def change(data):
        a = next(a for a in data["profile"] if a["slot"] == slot)
        cue = next(c for c in a["leak"]["cues"] if c["at"] == "timestamp" and "month" in next(
            p["caption"] for p in data["posts"] if p["id"] == c["post"]))
        month = MONTHS.index(a["path"][0]) + 1
        post = next(p for p in data["posts"] if p["id"] == cue["post"])
        post["timestamp"] = cue["text"] = f"2025-{month:02d}-{1 if a['value'].split()[0] != '1' else 2:02d}T12:15"
        picked.update(post=post["id"], month=a["path"][0])

    _edit(suite_copy, change, uid)
    got = _codes(suite_copy, uid)
    assert [c for c, _, _ in got] == ["d4_single_post"], got
    assert f"post {picked['post']} alone names '{picked['month']}'" in got[0][2]
