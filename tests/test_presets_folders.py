"""Where model presets come from: the shipped serving/ folder, and the folders LOCALBENCH_PRESETS
names, which add to it (issue 47, item 14: a folder there replaced the shipped presets, so a lab's
sixth model meant copying every shipped one)."""

from __future__ import annotations

import os

from typer.testing import CliRunner

from localbench.cli import app
from localbench.paths import presets_dir
from localbench.serving.presets import list_presets, load_preset

SHIPPED = "smollm2-135m"


def _preset(folder, name: str, description: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.yaml").write_text(f"description: {description}\nsource: {{kind: tiny-random, base: {SHIPPED}}}\n")


def test_a_users_folder_adds_to_the_shipped_presets_and_wins_a_name_clash(tmp_path, monkeypatch):
    lab, mine = tmp_path / "lab", tmp_path / "mine"
    _preset(lab, "lab-model", "the lab's own model")
    _preset(lab, "tiny-random", "the lab's tiny-random")
    _preset(mine, "tiny-random", "my tiny-random")
    monkeypatch.setenv("LOCALBENCH_PRESETS", str(lab))

    names = [p.name for p in list_presets()]
    assert "lab-model" in names and SHIPPED in names and names.count("tiny-random") == 1
    assert load_preset(SHIPPED).file == presets_dir() / f"{SHIPPED}.yaml"
    assert load_preset("lab-model").description == "the lab's own model"
    assert load_preset("tiny-random").description == "the lab's tiny-random"

    monkeypatch.setenv("LOCALBENCH_PRESETS", os.pathsep.join([str(mine), str(lab)]))  # the first folder wins
    assert load_preset("tiny-random").description == "my tiny-random"
    assert load_preset("lab-model").file == lab / "lab-model.yaml"

    listed = CliRunner().invoke(app, ["models"])
    assert listed.exit_code == 0 and "lab-model" in listed.output and SHIPPED in listed.output


def test_an_unknown_preset_names_every_folder_searched_and_every_known_preset(tmp_path, monkeypatch):
    _preset(tmp_path, "lab-model", "the lab's own model")
    monkeypatch.setenv("LOCALBENCH_PRESETS", str(tmp_path))
    try:
        load_preset("no-such-model")
    except ValueError as e:
        message = str(e)
    else:
        raise AssertionError("an unknown preset loaded")
    assert str(tmp_path) in message and str(presets_dir()) in message
    assert "lab-model" in message and SHIPPED in message
