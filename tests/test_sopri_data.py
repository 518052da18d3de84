"""SopriBench data: the shipped suite, the loaders and their errors, the generator, the HF mapping,
and `localbench data check`."""

from __future__ import annotations

import filecmp
import io
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from localbench.benchmarks.sopri import generate as gen
from localbench.benchmarks.sopri.check import check_source
from localbench.benchmarks.sopri.images import TEXT_KINDS
from localbench.benchmarks.sopri.loaders import BUILTIN_DIR, load_users, sandbox_dir
from localbench.benchmarks.sopri.scenario import DIFFICULTIES, LEAK_TYPES, SLOTS
from localbench.scenario_files import ScenarioError


@pytest.fixture(scope="module")
def builtin():
    return load_users("builtin")


def test_builtin_suite_covers_the_benchmark(builtin):
    assert len(builtin.users) >= 10 and not builtin.issues
    types, diffs = Counter(), Counter()
    for u in builtin.users:
        assert len(u.posts) >= 10
        assert {a.slot for a in u.profile} == set(SLOTS)
        assert 8 <= len(u.leaked) <= 14, u.id
        assert u.generator["name"] == gen.GENERATOR and u.generator["seed"] == str(gen.SUITE_SEED)
        for a in u.leaked:
            types[a.leak.type] += 1
            diffs[a.leak.difficulty] += 1
            if a.leak.type == "cross-post":
                assert len(set(a.leak.posts)) >= 2
        for p in u.posts:
            for im in p.images:
                assert u.image_path(im).is_file()
                assert bool(im.text) == (im.kind in TEXT_KINDS)
    assert set(types) == set(LEAK_TYPES) and set(diffs) == set(DIFFICULTIES)
    size = sum(f.stat().st_size for f in BUILTIN_DIR.rglob("*") if f.is_file())
    assert size < 3_000_000


def test_sandbox_covers_every_place_the_suite_uses(builtin):
    import csv
    import json

    sb = sandbox_dir("builtin")
    rows = list(csv.DictReader((sb / "gazetteer.csv").open()))
    assert set(rows[0]) == {"country", "province", "city", "district", "name", "kind", "aliases"}
    names = {r["name"] for r in rows}
    for u in builtin.users:
        for a in u.profile:
            if a.path and SLOTS[a.slot].place:
                assert set(a.path) <= names, (u.id, a.slot, a.path)
    docs = [json.loads(x) for x in (sb / "documents.jsonl").read_text().splitlines()]
    employers = {u.attribute("employer").value for u in builtin.users}
    assert all(any(e in d["text"] for d in docs) for e in employers)
    assert sandbox_dir("hf:someone/sopri") == sb  # hf sources use the built-in world


def test_cohort_filter_and_limit():
    assert len(load_users("builtin", categories="synthetic", limit=3).users) == 3
    with pytest.raises(ScenarioError, match="unknown cohort 'nope'"):
        load_users("builtin", categories="nope")


def _copy_user(tmp_path: Path, uid: str = "u01") -> Path:
    dst = tmp_path / "suite" / "users" / uid
    shutil.copytree(BUILTIN_DIR / "users" / uid, dst)
    return dst


def test_malformed_user_names_file_and_field(tmp_path):
    d = _copy_user(tmp_path)
    data = yaml.safe_load((d / "user.yaml").read_text())
    data["profile"][3]["sensitivity"] = 9
    (d / "user.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError) as e:
        load_users(tmp_path / "suite")
    assert e.value.file == str(d / "user.yaml") and e.value.field == "profile[3].sensitivity"

    data["profile"][3]["sensitivity"] = 3
    data["profile"][4]["leak"] = {"type": "explicit", "difficulty": 1, "posts": ["p99"]}
    (d / "user.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError, match="unknown post 'p99'") as e:
        load_users(tmp_path / "suite")
    assert e.value.field == "profile"


def test_missing_image_names_file_and_field(tmp_path):
    d = _copy_user(tmp_path)
    user = yaml.safe_load((d / "user.yaml").read_text())
    i, post = next((i, p) for i, p in enumerate(user["posts"]) if p.get("images"))
    (d / post["images"][0]["file"]).unlink()
    with pytest.raises(ScenarioError) as e:
        load_users(tmp_path / "suite")
    assert e.value.field == f"posts[{i}].images[0].file" and post["images"][0]["file"] in str(e.value)


def test_check_warns_about_leaks_without_their_cue(tmp_path):
    d = _copy_user(tmp_path)
    data = yaml.safe_load((d / "user.yaml").read_text())
    home = next(a for a in data["profile"] if a["slot"] == "home")
    home["leak"] = {"type": "explicit", "difficulty": 1, "posts": [data["posts"][0]["id"]],
                    "carriers": ["image:nothere.png"], "depth": 5}
    img = next(im for p in data["posts"] for im in p.get("images", []) if im["kind"] != "photo")
    img["text"] = ""
    (d / "user.yaml").write_text(yaml.safe_dump(data))
    rep = check_source(str(tmp_path / "suite"))
    assert not rep.failed
    codes = rep.flag_counts()
    assert codes["carrier_missing"] == 1 and codes["cue_missing"] == 1 and codes["empty_image_text"] == 1


def test_generator_is_reproducible_and_refuses_to_overwrite(tmp_path):
    a = gen.generate_users(2, 7, tmp_path / "a")
    b = gen.generate_users(2, 7, tmp_path / "b")
    assert [p.relative_to(tmp_path / "a") for p in a] == [p.relative_to(tmp_path / "b") for p in b]
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    assert gen.generate_users(2, 7, tmp_path / "a") == a  # same content: nothing to refuse
    other = (tmp_path / "a" / "users/u01/user.yaml").read_bytes()
    with pytest.raises(ScenarioError, match="other content"):
        gen.generate_users(2, 8, tmp_path / "a")
    assert (tmp_path / "a" / "users/u01/user.yaml").read_bytes() == other  # nothing written by a refused run
    gen.generate_users(2, 8, tmp_path / "a", overwrite=True)
    assert (tmp_path / "a" / "users/u01/user.yaml").read_bytes() != other
    assert len(load_users(tmp_path / "a").users) == 2


def test_shipped_suite_is_the_generators_output(tmp_path):
    gen.generate_users(gen.SUITE_N, gen.SUITE_SEED, tmp_path)
    made = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()}
    shipped = {p.relative_to(BUILTIN_DIR) for p in BUILTIN_DIR.rglob("*") if p.is_file()} - {Path("README.md")}
    assert made == shipped, "scenarios/sopri-mini is stale: rm -rf scenarios/sopri-mini/users; python -m " \
                            "localbench.benchmarks.sopri.generate --out " \
                            "scenarios/sopri-mini --overwrite"
    _, mismatch, errors = filecmp.cmpfiles(tmp_path, BUILTIN_DIR, [str(p) for p in made], shallow=False)
    assert not mismatch and not errors, f"stale files in scenarios/sopri-mini: {mismatch[:5]}"


def test_data_check_cli_builtin_exits_0():
    from localbench.cli import app

    for source in ("builtin", "builtin:sopri-mini"):  # the release taxonomy's suite, then localbench's
        res = CliRunner().invoke(app, ["data", "check", "--benchmark", "sopri", source])
        assert res.exit_code == 0, res.output
        assert "12 loaded, ok, 0 warnings" in res.output, res.output


def test_data_gen_cli_passes_model_only_where_accepted(tmp_path):
    from localbench.cli import app

    res = CliRunner().invoke(app, ["data", "gen", "sopri", "--n", "1", "--seed", "3", "--out", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "s/users/u01/user.yaml").is_file()
    assert "taxonomy: release" in (tmp_path / "s/users/u01/user.yaml").read_text()  # the default taxonomy's labels
    res = CliRunner().invoke(app, ["data", "gen", "agentleak", "--n", "1", "--out", str(tmp_path / "al"),
                                   "--model", "tiny-random"])
    assert res.exit_code != 0 and "templates only" in str(res.exception or res.output)


# -- the Hugging Face mapping, offline on a local dataset in the release layout -----------------------

def _png(text: str) -> bytes:
    from localbench.benchmarks.sopri.images import render

    return render("receipt", [text])


def _rows(drop: str | None = None) -> list[dict]:
    posts = [{"post_id": f"q{i}", "title": "", "caption": f"caption {i}", "tags": ["t"], "timestamp": f"2025-03-0{i}T10:00",
              "ip_region": "Arvenia · Lorrent", "metadata": '{"likes": "4"}',
              "images": [{"image": {"bytes": _png(f"CLINIC {i}"), "path": None}, "kind": "receipt", "alt": "a receipt",
                          "text": f"CLINIC {i}"}] if i == 1 else []} for i in (1, 2)]
    profile = [{"slot": "health", "value": "asthma", "path": ["respiratory", "asthma"], "sensitivity": 5,
                "leak": {"type": "cross-post", "difficulty": 4, "posts": ["q1", "q2"], "carriers": ["image:q1-1.png",
                                                                                                    "caption"], "depth": None}},
               {"slot": "home", "value": "Lotus Garden", "path": ["Arvenia", "Lorrent", "Halvik", "Old Port", "Lotus Garden"],
                "sensitivity": 5, "leak": {"type": "explicit", "difficulty": 1, "posts": ["q2"], "carriers": ["ip_region"],
                                           "depth": 2}}]
    row = {"user_id": "hf-1", "nickname": "anon", "bio": "", "ip_region": "Arvenia · Lorrent", "posts": posts,
           "profile": profile}
    if drop:
        row.pop(drop)
    return [row]


def _write_parquet(rows: list[dict], folder: Path) -> Path:
    import datasets

    folder.mkdir(parents=True)
    datasets.Dataset.from_list(rows).to_parquet(str(folder / "train.parquet"))
    return folder


def test_hf_mapping_on_a_local_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALBENCH_CACHE", str(tmp_path / "cache"))
    src = _write_parquet(_rows(), tmp_path / "release")
    res = load_users(f"hf:{src}")
    (u,) = res.users
    assert u.id == "hf-1" and [p.id for p in u.posts] == ["q1", "q2"]
    im = u.posts[0].images[0]
    assert im.text == "CLINIC 1" and u.image_path(im).read_bytes() == _png("CLINIC 1")
    assert u.posts[0].metadata == {"likes": "4"}
    assert u.attribute("home").leak.depth == 2 and u.attribute("health").leak.type == "cross-post"
    from PIL import Image

    assert Image.open(io.BytesIO(u.image_path(im).read_bytes())).size[0] <= 640
    rep = check_source(f"hf:{src}:train")
    assert len(rep.loaded) == 1 and rep.flag_counts()["missing_slot"] == 1


def test_hf_wrong_layout_names_the_column(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALBENCH_CACHE", str(tmp_path / "cache"))
    src = _write_parquet(_rows(drop="profile"), tmp_path / "release")
    with pytest.raises(ScenarioError, match="missing column 'profile'") as e:
        load_users(f"hf:{src}")
    assert e.value.field == "profile"
    rows = _rows()
    for p in rows[0]["posts"]:
        p.pop("timestamp")
    src2 = _write_parquet(rows, tmp_path / "release2")
    with pytest.raises(ScenarioError, match=r"missing column 'posts\[\]\.timestamp'"):
        load_users(f"hf:{src2}")


def test_hf_gated_or_absent_dataset_says_how_to_get_access(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(ScenarioError, match="HF_TOKEN"):
        load_users("hf:localbench-test/no-such-sopri-release")


# -- model-written captions: a real (tiny random) model under the caption grammar -----------------

def test_model_captions_keep_cues_or_fall_back(tmp_path, tiny_dir):
    gen.generate_users(1, 5, tmp_path / "m", model="tiny-random")
    (u,) = load_users(tmp_path / "m").users
    note = u.generator["captions"]
    assert note.startswith("model tiny-random: ") and u.generator["prompt_hash"]
    from localbench.benchmarks.sopri.captions import SentenceLedger

    draft = gen._draft(0, 5, SentenceLedger())
    template = {p.id: p.caption for p in draft.user.posts}
    for entry in note.split(": ", 1)[1].split(", "):
        pid, how = entry.split("=")
        post = u.post(pid)
        if how.startswith("template"):
            assert post.caption == template[pid]
        else:
            keep = draft.keep[pid]
            assert all(k.lower() in post.caption.lower() for k in keep)
    assert not [i for i in load_users(tmp_path / "m").issues if i.code == "cue_not_found"]  # spans follow the rewrite


def _d4_user(second_caption: str):
    """A user whose home district is labelled cross-post (D4) from posts p1 and p2."""
    posts = [{"id": "p1", "caption": "New flat, the tram stops right outside in Harbor District.",
              "timestamp": "2025-03-01T08:00:00"},
             {"id": "p2", "caption": second_caption, "timestamp": "2025-03-02T08:00:00"}]
    home = {"slot": "home", "value": "Maple Court", "path": ["Freedonia", "Westmark", "Port Ellis", "Harbor District",
                                                             "Maple Court"], "sensitivity": 4,
            "leak": {"type": "cross-post", "difficulty": 4, "posts": ["p1", "p2"], "depth": 4}}
    from localbench.benchmarks.sopri.scenario import User

    return User.model_validate({"id": "u1", "nickname": "n", "posts": posts, "profile": [home]})


def test_a_d4_label_one_post_suffices_for_is_flagged():
    """The D4 rule: no single cited post carries the value (or its parent in the hierarchy) alone."""
    from localbench.benchmarks.sopri.loaders import lint

    alone = [i for i in lint(_d4_user("Harbor District, Port Ellis: best noodles on the pier."), "f")
             if i.code == "d4_single_post"]
    assert {i.message.split("but post ")[1].split()[0] for i in alone} == {"p1", "p2"}
    assert "home" in alone[0].message and alone[0].field == "profile[0].leak.difficulty"


def test_a_true_cross_post_d4_label_passes():
    from localbench.benchmarks.sopri.loaders import lint

    # p1 names only the district's landmark-free description, p2 only the tram line: neither names a level alone
    u = _d4_user("Tram 4 to the office again.")
    u.posts[0].caption = "New flat, the tram stops right outside."
    assert not [i for i in lint(u, "f") if i.code == "d4_single_post"]


def test_the_generators_output_does_not_depend_on_the_blas_kernel(tmp_path):
    """The suite's images and boxes come out the same whichever BLAS kernel numpy runs: the scenes'
    projective maps are solved in plain floats. (With numpy.linalg, OPENBLAS_CORETYPE=Haswell on
    this project's machines moved a box's fourth decimal and two images' pixels, so the shipped
    suite matched the generator on one machine and not on another.)"""
    import os
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from localbench.benchmarks.sopri import generate as g; "
            "g.generate_users(g.SUITE_N, g.SUITE_SEED, Path(sys.argv[1]))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    for name, extra in (("plain", {}), ("haswell", {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512"})):
        subprocess.run([sys.executable, "-c", code, str(tmp_path / name)], check=True, env={**env, **extra}, timeout=300)
    made = sorted(p.relative_to(tmp_path / "plain") for p in (tmp_path / "plain").rglob("*") if p.is_file())
    _, mismatch, errors = filecmp.cmpfiles(tmp_path / "plain", tmp_path / "haswell", [str(p) for p in made], shallow=False)
    assert made and not mismatch and not errors, mismatch
