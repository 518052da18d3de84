"""The import direction of DESIGN.md holds: cli → pipeline → benchmarks → runtime/judging → serving.

Every ``localbench`` import in the package (module level or inside a function) is checked against
the rank of the part it comes from: a part may import only parts of lower or equal rank, and the
shared leaves (stats, report, errors, spec, ...) import only other leaves. A new top-level part
must be given a rank here, which is the point: where it sits is a decision, not an accident.

And the shared layers are benchmark-agnostic: no shared module (anything outside a benchmark's own
folder, localbench/benchmarks/<name>/) names AgentSocialBench's metrics, categories or levels; they
read its design instead. (Another benchmark's own code may use the same letters for its own things,
an ICD-10-CM code say.)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import localbench

PACKAGE = Path(localbench.__file__).parent

RANK = {
    # leaves: anyone may import them; they import only each other
    "<root>": 0, "errors": 0, "files": 0, "paths": 0, "spec": 0, "scores": 0, "stats": 0, "report": 0,
    "design": 0, "registry": 0, "runlog": 0, "scoring": 0, "viewdata": 0, "scenario_files": 0,
    "serving": 1,
    "runtime": 2,
    "judging": 2.5,
    "benchmarks": 3,
    "pipeline": 4,
    "rejudge": 5, "consequences": 5.5, "viewer": 5.5,
    "study": 5.75,  # a study is a set of ordinary runs: it drives the pipeline (and links the viewer); commands drive it
    "results_schema": 0,  # the results files' JSON schemas, generated from the leaves' models
    "commands": 6, "cli": 6, "slurm": 6,
}


def _part(module: str) -> str:
    parts = [p for p in module.split(".") if p != "__init__"]
    return parts[1] if len(parts) > 1 else "<root>"


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "localbench":
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "localbench"]
    return out


def _violations() -> list[str]:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent)
        src = _part(".".join(rel.with_suffix("").parts))
        if src not in RANK:
            bad.append(f"{rel}: part '{src}' has no rank in tests/test_layering.py")
            continue
        for line, module in _imports(path):
            dst = _part(module)
            if dst == src:
                continue
            if dst not in RANK:
                bad.append(f"{rel}:{line}: imports '{module}', whose part has no rank")
            elif RANK[dst] > RANK[src]:
                bad.append(f"{rel}:{line}: {src} (rank {RANK[src]}) imports {module} (rank {RANK[dst]})")
    return bad


def test_imports_follow_the_design_direction():
    assert _violations() == []


def test_the_check_sees_function_level_imports(tmp_path, monkeypatch):
    """A judging module that imports a benchmark inside a function is caught."""
    fake = tmp_path / "localbench"
    (fake / "judging").mkdir(parents=True)
    (fake / "judging" / "x.py").write_text("def f():\n    from localbench.benchmarks.asb import scenario\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert _violations() == ["localbench/judging/x.py:2: judging (rank 2.5) imports localbench.benchmarks.asb "
                             "(rank 3)"]


# AgentSocialBench's own names: its metrics, its categories, its privacy levels.
ASB_NAMES = ("CDLR", "MLR", "CULR", "MPLR", "HALR", "CSLR", "CER", "ACS", "IAS", "TCQ", "Task%", "CD", "MC", "CU",
             "GC", "HS", "CM", "AM", "L0", "L1", "L2")
def _word(names) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                      + r")(?![A-Za-z0-9_%])")


_ASB_WORD = _word(ASB_NAMES)


def _asb_mentions(root: Path, word: re.Pattern[str] = _ASB_WORD) -> list[str]:
    """file:line: name, for every name ``word`` finds (ASB's by default) in a shared module's code,
    strings and comments."""
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or path.suffix not in (".py", ".j2") or (rel.parts[0] == "benchmarks" and len(rel.parts) > 2):
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in word.finditer(line):
                out.append(f"{rel}:{n}: {m.group(1)}")
    return out


def test_no_shared_module_names_an_asb_metric_category_or_level():
    assert _asb_mentions(PACKAGE) == []


def test_no_shared_module_names_any_benchmarks_metric():
    """Every registered benchmark's metric acronyms (ELR, PES, WLS, ...), not only AgentSocialBench's:
    a shared layer (compare, the report, a study) reads a design's metrics, it never names them."""
    from localbench.registry import design_of, registered

    names = {m.name.split(":")[0] for b in registered() for m in design_of(b).metrics}
    acronyms = {n for n in names if re.fullmatch(r"[A-Z][A-Z0-9%]+", n)}
    assert {"ELR", "PES", "CDLR"} <= acronyms
    assert _asb_mentions(PACKAGE, _word(acronyms)) == []


def test_the_name_check_finds_a_metric_and_a_category(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "x.py").write_text('HEAD = {"CD": "CDLR"}\nok = "CDROM, ACSII, L0x"\n')
    (tmp_path / "benchmarks" / "asb").mkdir(parents=True)
    (tmp_path / "benchmarks" / "asb" / "y.py").write_text('"CD"\n')
    (tmp_path / "benchmarks" / "__init__.py").write_text('HEADLINE = "MLR"\n')  # the shared plug-in protocol
    assert _asb_mentions(tmp_path) == ["benchmarks/__init__.py:1: MLR", "report/x.py:1: CD", "report/x.py:1: CDLR"]


# -- no shared module names a benchmark ------------------------------------------------------------------

def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes (a module's, class's or function's first string): prose, not code."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def _benchmark_mentions(root: Path, names: list[str]) -> list[str]:
    """file:line: what, for every import of a benchmark's folder and every string in code that names a
    registered benchmark, in a module outside that benchmark's folder (the registry's default excepted)."""
    word = re.compile(r"(?<![A-Za-z0-9_-])(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                      + r")(?![A-Za-z0-9_-])")
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        own = rel.parts[1] if rel.parts[0] == "benchmarks" and len(rel.parts) > 2 else None
        tree = ast.parse(path.read_text(encoding="utf-8"))
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for m in modules:
                    parts = m.split(".")
                    if parts[:2] == ["localbench", "benchmarks"] and len(parts) > 2 and parts[2] not in ("contract",) \
                            and parts[2] != own:
                        out.append(f"{rel}:{node.lineno}: imports {m}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose \
                    and own is None and rel != Path("registry.py"):
                for m in word.finditer(node.value):
                    out.append(f"{rel}:{node.lineno}: '{m.group(1)}'")
    return out


def test_no_shared_module_names_a_benchmark():
    """A fourth benchmark is a folder: nothing outside a benchmark's folder imports it or names it in
    code (prose in docstrings may use one as an example); benchmarks do not import each other."""
    from localbench.registry import registered

    assert _benchmark_mentions(PACKAGE, list(registered())) == []


def test_the_benchmark_check_finds_an_import_and_a_name(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "x.py").write_text('"""About sopri, in prose."""\nfrom localbench.benchmarks.sopri import y\n'
                                              'NAME = "sopri"\nOK = "sopria"\n')
    (tmp_path / "benchmarks" / "asb").mkdir(parents=True)
    (tmp_path / "benchmarks" / "asb" / "z.py").write_text('NAME = "asb"\nimport localbench.benchmarks.sopri.w\n')
    assert _benchmark_mentions(tmp_path, ["asb", "sopri"]) == [
        "benchmarks/asb/z.py:2: imports localbench.benchmarks.sopri.w",
        "report/x.py:2: imports localbench.benchmarks.sopri", "report/x.py:3: 'sopri'"]
