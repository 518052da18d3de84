"""The gold-set format, its errors, and merging annotators (with their agreement reported)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from localbench.cli import app
from localbench.judging.gold import (
    GoldError,
    GoldItem,
    LabelRecord,
    annotator_labels,
    consensus,
    merge,
    read_gold,
    write_gold,
)


def item(i: int, label="none", **kw) -> GoldItem:
    return GoldItem.model_validate({
        "id": f"g{i}", "messages": [{"sender": "A's agent", "recipients": ["B"], "content": f"message {i}"}],
        "item": {"owner": "A Person", "text": f"secret {i}", "field": "ssn" if i % 2 else None},
        "label": label, "source": {"kind": "import"}, **kw})


def _write_lines(path, lines):
    path.write_text("".join((json.dumps(x) if not isinstance(x, str) else x) + "\n" for x in lines))
    return path


def test_roundtrip_and_agentleak_style_field(tmp_path):
    items = [item(i, lv) for i, lv in enumerate(["none", "partial", "full", None])]
    p = write_gold(tmp_path / "g.jsonl", items)
    back = read_gold(p)
    assert back == items and back[1].item.field == "ssn" and back[3].label is None


@pytest.mark.parametrize("line, message", [
    ("{not json", "g.jsonl:2: not valid JSON"),
    ({"id": "x", "messages": [], "item": {"owner": "A", "text": "t"}, "source": {"kind": "import"}},
     "g.jsonl:2: field 'messages'"),
    ({"id": "x", "messages": [{"sender": "a", "content": "c"}], "item": {"owner": "A", "text": "t"},
      "label": "leak", "source": {"kind": "import"}}, "g.jsonl:2: field 'label'"),
    ({"id": "g0", "messages": [{"sender": "a", "content": "c"}], "item": {"owner": "A", "text": "t"},
      "source": {"kind": "import"}}, "duplicate id 'g0'"),
    ({"id": "y", "messages": [{"sender": "a", "content": "c"}], "item": {"owner": "A", "text": "t"},
      "source": {"kind": "import"}, "planted": [3]}, "field 'planted': index 3"),
])
def test_bad_lines_name_file_line_and_field(tmp_path, line, message):
    p = _write_lines(tmp_path / "g.jsonl", [item(0).model_dump(mode="json"), line])
    with pytest.raises(GoldError, match=message.replace("(", r"\(")):
        read_gold(p)


def test_empty_and_missing_files(tmp_path):
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(GoldError, match="no gold items"):
        read_gold(tmp_path / "e.jsonl")
    with pytest.raises(GoldError, match="cannot read"):
        read_gold(tmp_path / "missing.jsonl")


@pytest.mark.parametrize("labels, rule, expected", [
    (["full", "full", "none"], "majority", "full"),
    (["full", "none"], "majority", None),
    (["full", None, None], "majority", "full"),
    ([None, None], "majority", None),
    (["partial", "partial", "full"], "unanimous", None),
    (["partial", "partial"], "unanimous", "partial"),
])
def test_consensus(labels, rule, expected):
    assert consensus(labels, rule) == expected


def _labels(path, annotator, answers):
    """A label file as the labeller writes it: items named by their opaque number only."""
    from localbench.judging.gold import opaque_number

    recs = [LabelRecord(key=opaque_number(i) + ("|skip" if lv == "skip" else ""), shown_as=opaque_number(i),
                        annotator=annotator, label=None if lv == "skip" else lv, skipped=lv == "skip").dump()
            for i, lv in answers.items()]
    return _write_lines(path, recs)


def test_merge_majority_keeps_each_annotator(tmp_path):
    items = [item(i, "none") for i in range(4)]
    a = _labels(tmp_path / "a.jsonl", "ana", {"g0": "full", "g1": "none", "g2": "partial", "g3": "skip"})
    b = _labels(tmp_path / "b.jsonl", "bo", {"g0": "full", "g1": "partial", "g2": "partial"})
    c = _labels(tmp_path / "c.jsonl", "cy", {"g0": "none", "g1": "full", "g2": "partial"})
    by = annotator_labels(items, [a, b, c])
    assert by["ana"] == {"g0": "full", "g1": "none", "g2": "partial"}  # the skip is not a label
    merged = merge(items, by)
    assert [m.label for m in merged] == ["full", None, "partial", None]
    assert merged[0].annotations == {"ana": "full", "bo": "full", "cy": "none"}
    assert merged[0].source.kind == "human" and "majority of ana, bo, cy" in merged[0].source.annotator
    kept = merge(items, by, keep_existing=True)
    assert [m.label for m in kept] == ["none"] * 4 and kept[0].annotations["bo"] == "full"


def test_label_files_are_checked(tmp_path):
    items = [item(0)]
    unknown = _labels(tmp_path / "u.jsonl", "ana", {"zz": "full"})
    with pytest.raises(GoldError, match="shown_as '#[0-9]{6}' is not the number of any item of the gold set"):
        annotator_labels(items, [unknown])
    legacy = _write_lines(tmp_path / "old.jsonl", [{"key": "g0", "item_id": "g0", "annotator": "ana", "label": "full"}])
    assert annotator_labels(items, [legacy]) == {"ana": {"g0": "full"}}  # a label file from before: still read
    a1 = _labels(tmp_path / "a1.jsonl", "ana", {"g0": "full"})
    a2 = _labels(tmp_path / "a2.jsonl", "ana", {"g0": "none"})
    with pytest.raises(GoldError, match="annotator 'ana' appears in two label files"):
        annotator_labels(items, [a1, a2])


def test_cli_merge_reports_kappa_alpha_ac1(tmp_path):
    items = [item(i) for i in range(12)]
    gold = write_gold(tmp_path / "gold.jsonl", items)
    seq = ["none", "partial", "full"]
    a = _labels(tmp_path / "a.jsonl", "ana", {f"g{i}": seq[i % 3] for i in range(12)})
    b = _labels(tmp_path / "b.jsonl", "bo", {f"g{i}": seq[i % 3] if i < 9 else "none" for i in range(12)})
    out = tmp_path / "merged.jsonl"
    res = CliRunner().invoke(app, ["judges", "gold", "merge", str(gold), "--labels", str(a), "--labels", str(b),
                                   "--out", str(out), "--rule", "unanimous"])
    assert res.exit_code == 0, res.output
    assert "κ(ana, bo) =" in res.output and "α (ordinal) =" in res.output and "AC1 =" in res.output
    merged = read_gold(out)
    assert sum(m.label is not None for m in merged) == 10  # items 9..11 disagree except g9 ("none" both)
    # the items they disagree on, listed (with the number the annotators saw) and written beside the merge
    from localbench.judging.labeller import opaque_number

    assert "2 items labelled differently" in res.output
    assert f"{opaque_number('g10')} g10: ana partial, bo none" in res.output and "g11: ana full, bo none" in res.output
    diff = [json.loads(x) for x in (tmp_path / "merged.jsonl.disagreements.jsonl").read_text().splitlines()]
    assert diff == [{"item_id": "g10", "shown_as": opaque_number("g10"), "labels": {"ana": "partial", "bo": "none"}},
                    {"item_id": "g11", "shown_as": opaque_number("g11"), "labels": {"ana": "full", "bo": "none"}}]
    res = CliRunner().invoke(app, ["judges", "gold", "import", str(out), "--out", str(tmp_path / "i.jsonl"),
                                   "--annotator", "panel"])
    assert res.exit_code == 0 and read_gold(tmp_path / "i.jsonl")[0].source.annotator == "panel"
