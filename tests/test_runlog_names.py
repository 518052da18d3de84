"""The run log (localbench/runlog/) is the one place a run file's name is spelt.

Every other module asks it for a path (``RunPaths(run).transcripts_path``) or a name
(``RunFiles.SCORES``): a string literal that is a run file's name, or a path ending in one, is a
second spelling that a rename would miss. Folder names (tables, view, judges, ...) are common
words, so a folder counts only as a path: a literal joined onto a path with ``/`` (but not onto
the repository root, whose judges/ and slurm/ are the repository's own), a component of a literal
that holds a ``/``, or the value of an upper-case constant (``VIEW_DIR = "view"``). The names
come from the run log itself, so a new one is covered.
Docstrings are prose, not paths, and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import localbench
from localbench.runlog import RunDir, RunFiles, judge_of, resume_judge, same_judge
from localbench.spec import load_spec

PACKAGE = Path(localbench.__file__).parent


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _leftmost(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        node = node.left
    return node


def _ends_with(value: str, name: str) -> bool:
    """``value`` is ``name`` or ends with it as a whole word ("in transcripts.jsonl", "RUN/scores.json")."""
    before = value[:-len(name)][-1:]
    return value.endswith(name) and not (before.isalnum() or (before != "" and before in "_-."))


def _spelt(value: str, files: tuple[str, ...], folders: tuple[str, ...], joined: bool) -> str | None:
    for name in files:
        if _ends_with(value, name):
            return name
    if joined and value in folders:
        return value
    if "/" in value:
        return next((part for part in value.split("/") if part in folders), None)
    return None


def run_file_spellings(root: Path) -> list[str]:
    """file:line: name, for every string literal under ``root`` (the run log's own folder aside)
    that spells a run file's name."""
    files, folders = RunFiles.files(), RunFiles.folders()
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "runlog":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        joined = {}  # literal -> whether it is used as a path that is not under the repository root
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant):
                base = _leftmost(node)
                joined[id(node.right)] = not (isinstance(base, ast.Name) and base.id == "REPO_ROOT")
            elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                  and all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets)):
                joined[id(node.value)] = True
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                name = _spelt(node.value, files, folders, joined.get(id(node), False))
                if name:
                    out.append(f"{rel}:{node.lineno}: {name}")
    return sorted(set(out))


def test_only_the_run_log_spells_a_run_file_name():
    assert run_file_spellings(PACKAGE) == []


def test_the_check_sees_a_run_file_name(tmp_path):
    """A module that spells a file, a path ending in one, or a folder joined onto a run is caught;
    the repository's own folders, a word in a dict and a docstring are not."""
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "x.py").write_text(
        '"""Reads transcripts.jsonl."""\n'
        'def f(run):\n'
        '    a = run / "scores.json"\n'
        '    b = f"{run}/judgments.jsonl", "not in spec.yaml", "my_spec.yaml", "x.lock"\n'
        '    c = run / "tables" / "t.csv"\n'
        '    d = REPO_ROOT / "judges"\n'
        '    e = {"judges": 1, "view": "view/index.html"}\n'
        '    return a, b, c, d, e\n'
        'VIEW_DIR = "view"\n'
        'view = "view"\n')
    (tmp_path / "runlog").mkdir()
    (tmp_path / "runlog" / "y.py").write_text('SCORES = "scores.json"\n')
    assert run_file_spellings(tmp_path) == ["report/x.py:3: scores.json", "report/x.py:4: judgments.jsonl",
                                            "report/x.py:4: spec.yaml", "report/x.py:5: tables", "report/x.py:7: index.html",
                                            "report/x.py:9: view"]


def test_the_names_are_the_run_logs():
    assert {"spec.yaml", "transcripts.jsonl", "judgments.jsonl", "scores.json", ".lock"} <= set(RunFiles.files())
    assert {"shards", "judges", "view"} <= set(RunFiles.folders())


# -- the same-judge rule ----------------------------------------------------------------------------

@pytest.fixture
def run(tmp_path):
    spec = load_spec(None, out=str(tmp_path), run_id="r")
    return spec, RunDir(spec.run_dir)


def test_a_fresh_run_is_judged_with_the_specs_judge(run):
    spec, rd = run
    assert judge_of(spec, rd) == spec.judge_model
    assert same_judge(spec, rd)
    assert resume_judge(spec, rd) is spec


def test_a_run_goes_on_with_the_judge_its_judge_stage_recorded(run):
    spec, rd = run
    rd.write_spec(spec, {"judge": {"model": "other-judge"}})
    assert judge_of(spec, rd) == "other-judge"
    assert not same_judge(spec, rd)
    assert resume_judge(spec, rd).judge_model == "other-judge"  # no judge named: the recorded one goes on
    named = spec.with_model(spec.design.judge_role, "third-judge")
    assert resume_judge(named, rd) is named  # a judge named on the command line is the one asked for
