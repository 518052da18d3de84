"""SopriBench reads the released code's input format (argus-user-json-v1): one file or a folder, the
release's aliases, media confined to the input folder (no URL fetched, data URLs decoded and checked),
a labels file beside a user making the run scored, and the shipped suite written out and read back."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from localbench.benchmarks.sopri import argus_input
from localbench.benchmarks.sopri.check import check_source
from localbench.benchmarks.sopri.loaders import load_users
from localbench.cli import app
from localbench.scenario_files import ScenarioError


def _png(color: str = "red") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 12), color).save(buf, format="PNG")
    return buf.getvalue()


def _user(uid: str = "sample_user_001", **post: object) -> dict:
    """The release's example user (two posts), with ``post`` fields overriding the first post's."""
    return {"user_id": uid, "platform": "synthetic",
            "metadata": {"nickname": "Sample User", "bio": "Weekend runner.", "ip_location": "California"},
            "posts": [{"post_id": "post_001", "title": "Morning routine", "caption": "Early run near campus.",
                       "tags": ["running", "campus"], "timestamp": "2026-01-10T08:30:00Z",
                       "media_files": ["img/run.png"], "metadata": {"location": None, "likes": 12}, **post},
                      {"post_id": "post_002", "caption": "Desk cleanup.", "timestamp": "2026-01-12T19:10:00Z"}]}


def _write(folder: Path, data: dict, name: str | None = None) -> Path:
    (folder / "img").mkdir(parents=True, exist_ok=True)
    (folder / "img" / "run.png").write_bytes(_png())
    path = folder / (name or f"{data.get('user_id', data.get('id'))}.json")
    path.write_text(json.dumps(data))
    return path


def _error(folder: Path, data: dict) -> ScenarioError:
    path = _write(folder, data)
    with pytest.raises(ScenarioError) as e:
        load_users(f"argus:{path}")
    assert str(path) in str(e.value)
    return e.value


def test_one_file_reads_as_a_user_with_the_release_fields(tmp_path):
    path = _write(tmp_path, _user())
    (u,) = load_users(str(path)).users  # a .json file is detected as argus input
    assert (u.id, u.nickname, u.bio, u.ip_region, u.profile) == ("sample_user_001", "Sample User", "Weekend runner.",
                                                                 "California", [])
    p = u.posts[0]
    assert (p.id, p.title, p.caption, p.tags, p.timestamp) == ("post_001", "Morning routine", "Early run near campus.",
                                                               ["running", "campus"], "2026-01-10T08:30:00Z")
    assert p.metadata == {"likes": "12"}  # a null value dropped, a number as text
    assert [im.file for im in p.images] == ["img/run.png"] and u.image_path(p.images[0]) == tmp_path / "img/run.png"


def test_a_folder_reads_every_user_file_but_the_manifest_and_the_aliases(tmp_path):
    alias = {"id": "second", "metadata": {"nickname": "B", "location_ip": "Oregon"},
             "posts": [{"id": "x1", "text": "Hello", "hashtags": ["a"], "topics": ["b"], "tagged_users": ["@bob"],
                        "created_at": "2026-02-01T10:00:00", "location_ip": "Oregon",
                        "images": [{"file": "img/run.png", "type": "photo", "alt": "a red square"},
                                   {"path": "clip.mp4", "type": "video"}, "voice.mp3"]}]}
    _write(tmp_path, _user())
    _write(tmp_path, alias, "second.json")
    (tmp_path / "manifest.json").write_text(json.dumps({"users": ["x"]}))
    res = load_users(str(tmp_path))
    assert [u.id for u in res.users] == ["sample_user_001", "second"]
    b = res.users[1]
    assert (b.ip_region, b.posts[0].caption, b.posts[0].tags, b.posts[0].ip_region) == ("Oregon", "Hello", ["b", "a"],
                                                                                        "Oregon")
    assert b.posts[0].metadata == {"tagged_users": "@bob"}
    assert [(im.file, im.alt) for im in b.posts[0].images] == [("img/run.png", "a red square")]
    codes = [i.code for i in res.issues]
    assert codes.count("media_skipped") == 2 and codes.count("unlabelled") == 2
    assert argus_input.is_argus_source(tmp_path) and not argus_input.is_argus_source("builtin")


@pytest.mark.parametrize("post, field, words", [
    ({"timestamp": "last tuesday"}, "posts[0].timestamp", "not an ISO 8601 time"),
    ({"timestamp": None}, "posts[0].timestamp", "missing"),
    ({"caption": {"en": "x"}}, "posts[0].caption", "expected a string"),
    ({"tags": "ok", "hashtags": [1, None]}, "posts[0].hashtags", "list of strings"),
    ({"media_files": ["https://example.com/a.jpg"]}, "posts[0].media_files[0]", "fetches no media from the network"),
    ({"media_files": ["../outside.png"]}, "posts[0].media_files[0]", "leaves the input folder"),
    ({"media_files": ["/etc/hostname.png"]}, "posts[0].media_files[0]", "outside the input folder"),
    ({"media_files": ["data:text/plain;base64,aGk="]}, "posts[0].media_files[0]", "not an image"),
    ({"media_files": ["data:image/png;base64,@@@"]}, "posts[0].media_files[0]", "does not decode"),
    ({"media_files": ["img/missing.png"]}, "posts[0].images[0].file", "not found"),
])
def test_a_bad_field_is_an_error_naming_file_and_field(tmp_path, post, field, words):
    e = _error(tmp_path, _user(**post))
    assert e.field == field and words in e.detail, (e.field, e.detail)


def test_a_symbolic_link_and_a_non_image_are_refused(tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.png"
    outside.write_bytes(_png())
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "link.png").symlink_to(outside)
    assert "symbolic link" in _error(folder, _user(media_files=["link.png"])).detail
    (folder / "fake.png").write_text("not a picture")
    assert "not an image Pillow can read" in _error(folder, _user(media_files=["fake.png"])).detail
    assert "posts" in _error(folder, {**_user(), "posts": []}).field


def test_a_data_url_is_decoded_into_the_cache_and_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALBENCH_CACHE", str(tmp_path / "cache"))
    url = "data:image/png;base64," + base64.b64encode(_png("blue")).decode()
    path = _write(tmp_path / "in", _user(media_files=["img/run.png", url]))
    (u,) = load_users(f"argus:{path}").users
    files = [im.file for im in u.posts[0].images]
    assert files[0] == "img/run.png" and files[1].startswith("data-") and files[1].endswith(".png")
    assert u.folder is not None and u.folder.is_relative_to(tmp_path / "cache")
    assert u.image_path(u.posts[0].images[1]).read_bytes() == _png("blue")
    assert u.image_path(u.posts[0].images[0]).read_bytes() == _png()  # copied beside it, after the same checks
    bad = "data:image/png;base64," + base64.b64encode(b"not a png at all").decode()
    assert "not an image Pillow can read" in _error(tmp_path / "bad", _user(media_files=[bad])).detail


def test_a_labels_file_beside_the_user_makes_it_labelled(tmp_path):
    path = _write(tmp_path, _user())
    labels = path.with_name("sample_user_001.labels.yaml")
    labels.write_text("user_id: sample_user_001\ntaxonomy: localbench\nimages:\n  img/run.png: {kind: photo, text: ''}\n"
                      "profile:\n- {slot: hobbies, value: running, sensitivity: 1,\n"
                      "   leak: {type: explicit, difficulty: 1, posts: [post_001], carriers: [tags]}}\n")
    (u,) = load_users(str(path)).users
    assert [(a.slot, a.value) for a in u.leaked] == [("hobbies", "running")]
    labels.write_text("user_id: someone_else\nprofile: []\n")
    with pytest.raises(ScenarioError, match="labels.yaml: field 'user_id'"):
        load_users(str(path))
    labels.write_text("profile: []\nimages: {img/other.png: {kind: photo}}\n")
    with pytest.raises(ScenarioError, match=r"field 'images.img/other.png': no image"):
        load_users(str(path))


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("argus") / "suite"
    res = CliRunner().invoke(app, ["data", "export", "argus", "builtin", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _comparable(user) -> dict:
    """A user's fields with each image named by its file name and content (the export puts it in a subfolder,
    and cues and carriers name it by that path)."""
    d = json.loads(user.model_dump_json())
    for p, post in zip(d["posts"], user.posts):
        for im, image in zip(p["images"], post.images):
            im["file"] = Path(im["file"]).name
            im["bytes"] = user.image_path(image).read_bytes()
    for a in d["profile"]:
        if a.get("leak"):
            a["leak"]["carriers"] = [c if not c.startswith("image:") else "image:" + Path(c[6:]).name
                                     for c in a["leak"]["carriers"]]
            for cue in a["leak"]["cues"]:
                cue["file"] = cue["file"] and Path(cue["file"]).name
    return d


def test_the_shipped_suite_round_trips_through_the_format(exported):
    from localbench.benchmarks.sopri.taxonomy import builtin_source

    suite = load_users(builtin_source("builtin")).users  # the default taxonomy's suite, as export reads it
    back = load_users(f"argus:{exported}")
    assert [u.id for u in back.users] == [u.id for u in suite]
    assert [_comparable(u) for u in back.users] == [_comparable(u) for u in suite]
    assert [i for i in back.issues if i.code != "no_alt"] == []
    raw = json.loads((exported / "u01.json").read_text())
    assert raw["schema_version"] == argus_input.SCHEMA and set(raw) >= {"user_id", "metadata", "posts"}
    assert set(raw["posts"][0]) >= {"post_id", "title", "caption", "tags", "timestamp", "media_files", "metadata"}
    assert not any("text" in m for p in raw["posts"] for m in p["media_files"])  # planted text stays in the labels
    assert (exported / "sandbox" / "gazetteer.csv").is_file()
    again = CliRunner().invoke(app, ["data", "export", "argus", "builtin", "--out", str(exported)])
    assert again.exit_code == 0, again.output  # the same files again: nothing differs


def test_data_check_validates_an_argus_folder(tmp_path):
    _write(tmp_path, _user())
    rep = check_source(str(tmp_path))
    assert len(rep.loaded) == 1 and not rep.failed and rep.flag_counts()["unlabelled"] == 1
    (tmp_path / "broken.json").write_text(json.dumps(_user("broken", timestamp="soon")))
    res = CliRunner().invoke(app, ["data", "check", "--benchmark", "sopri", f"argus:{tmp_path}"])
    assert res.exit_code == 1 and "broken.json" in res.output and "posts[0].timestamp" in res.output, res.output


def test_an_unlabelled_user_runs_and_the_report_lists_its_profile_without_pes(tmp_path, exported):
    """The real CLI on a folder of two labelled users (from the export) and one without labels: every user
    is attacked; the labelled ones are scored, the unlabelled one has no PES (absent, not 0, not failed) and
    the report lists what each attacker inferred about it and says why it has no PES."""
    mix = tmp_path / "mix"
    mix.mkdir()
    for name in ("u01.json", "u01.labels.yaml", "u02.json", "u02.labels.yaml"):
        (mix / name).write_bytes((exported / name).read_bytes())
    for uid in ("u01", "u02"):
        (mix / uid).mkdir()
        for f in (exported / uid).iterdir():
            (mix / uid / f.name).write_bytes(f.read_bytes())
    _write(mix, _user())
    from localbench.benchmarks.sopri.design import SopriSettings

    labelled_under = next(u for u in load_users(str(mix)).users if u.profile).taxonomy  # the run's must match
    setting = ["--setting", f"taxonomy={labelled_under}"] if "taxonomy" in SopriSettings.model_fields else []
    res = subprocess.run([sys.executable, "-m", "localbench.cli", "run", "--benchmark", "sopri", "--scenarios", str(mix),
                          "--attackers", "majority", "--judge", "exact", "--agent", "tiny-random", *setting,
                          "--out", str(tmp_path), "--run-id", "argus"], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "COLUMNS": "200"})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    run = tmp_path / "argus"
    scores = [json.loads(x) for x in (run / "scenario_scores.jsonl").read_text().splitlines() if x.strip()]
    assert len(scores) == 3
    for s in scores:
        if s["scenario"] == "sample_user_001":
            assert s["metrics"]["PES"] is None and "PES" not in s["failed"] and s["payload"]["unlabelled"]
        else:
            assert s["metrics"]["PES"] is not None and "unlabelled" not in s["payload"]
    majority = next(s for s in scores if s["scenario"] == "sample_user_001" and s["condition"] == "majority")
    assert majority["payload"]["answers"]  # the labelled users' most common values
    report = (run / "report.md").read_text()
    assert "Inferred profiles of unlabelled users" in report and "No PES for 1 of 3 users" in report
    slot, value = next(iter(majority["payload"]["answers"].items()))
    assert f"{slot}: {value}" in report


def test_an_unlabelled_user_is_never_counted_as_no_leak(tmp_path):
    """Its leakage units are unknown (None, left out of every leak rate), not an empty set of unleaked ones."""
    from localbench.benchmarks.sopri.judges import GRANULARITY_JUDGE
    from localbench.benchmarks.sopri.scoring import leak_units
    from localbench.runlog import Judgment

    (u,) = load_users(str(_write(tmp_path, _user()))).users
    rule = Judgment(key="k|granularity|all", sim_key="k", judge=GRANULARITY_JUDGE, target="all",
                    label={"levels": {}})  # what the judge stage writes when no leaked attribute was answered
    assert leak_units(u, [rule]) is None and leak_units(u, []) is None
