"""Images checked and confined (issue 33 item 2, SopriBench): `data check` and the run's loading name
each bad image kind with its path, refuse links and paths leaving the suite, and the viewer embeds
only plain files inside the user's folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from PIL import Image

from localbench.benchmarks.sopri import image_check
from localbench.benchmarks.sopri.check import check_source
from localbench.benchmarks.sopri.loaders import BUILTIN_DIR, load_users
from localbench.benchmarks.sopri.view import _data_uri
from localbench.scenario_files import ScenarioError

UID = "u01"


def _suite(tmp_path: Path) -> tuple[Path, Path, str]:
    """A one-user suite; (suite, user folder, the first image's file name)."""
    d = tmp_path / "suite" / "users" / UID
    shutil.copytree(BUILTIN_DIR / "users" / UID, d)
    data = yaml.safe_load((d / "user.yaml").read_text())
    first = next(im["file"] for p in data["posts"] for im in p.get("images", []))
    return tmp_path / "suite", d, first


def _refused(suite: Path, what: str, name: str) -> None:
    rep = check_source(str(suite))
    assert len(rep.failed) == 1 and what in str(rep.failed[0].error) and name in str(rep.failed[0].error), \
        [str(f.error) for f in rep.failed]
    with pytest.raises(ScenarioError, match=what):
        load_users(suite)  # the run loads through the same check, before any simulation


def test_zero_byte_image_is_named(tmp_path):
    suite, d, f = _suite(tmp_path)
    (d / f).write_bytes(b"")
    _refused(suite, "empty file", f)


def test_truncated_image_is_named(tmp_path):
    suite, d, f = _suite(tmp_path)
    data = (d / f).read_bytes()
    (d / f).write_bytes(data[: len(data) // 2])
    _refused(suite, "does not decode", f)


def test_non_image_file_is_named(tmp_path):
    suite, d, f = _suite(tmp_path)
    (d / f).write_text("this is not a png\n" * 20)
    _refused(suite, "not an image", f)


def test_over_size_image_is_named(tmp_path, monkeypatch):
    suite, d, f = _suite(tmp_path)
    Image.new("L", (300, 300)).save(d / f, format="PNG")
    monkeypatch.setattr(image_check, "MAX_PIXELS", 200 * 200)
    _refused(suite, "over the limit", f)


def test_symlink_escaping_the_suite_is_refused_and_never_embedded(tmp_path):
    suite, d, f = _suite(tmp_path)
    secret = tmp_path / "secret.png"
    Image.new("RGB", (8, 8), "red").save(secret)
    (d / f).unlink()
    (d / f).symlink_to(secret)
    _refused(suite, "symbolic link", f)
    # the viewer, handed such a user anyway, does not read the file the link points to
    data = yaml.safe_load((d / "user.yaml").read_text())
    from localbench.benchmarks.sopri.scenario import User

    user = User.model_validate(data).at(d)
    post = next(p for p in user.posts if any(im.file == f for im in p.images))
    assert len(_data_uri(user, post)) == len(post.images) - 1


def test_a_link_inside_the_suite_is_refused_too(tmp_path):
    suite, d, f = _suite(tmp_path)
    (d / "copy.png").write_bytes((d / f).read_bytes())
    (d / f).unlink()
    (d / f).symlink_to(d / "copy.png")
    _refused(suite, "symbolic link", f)


def test_the_cli_names_the_bad_image_and_exits_non_zero(tmp_path):
    suite, d, f = _suite(tmp_path)
    (d / f).write_bytes(b"")
    res = subprocess.run([sys.executable, "-m", "localbench.cli", "data", "check", "--benchmark", "sopri", str(suite)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and f in res.stdout + res.stderr, res.stdout + res.stderr
