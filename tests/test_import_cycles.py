"""No import cycles in localbench, at module granularity, counting imports inside functions too:
a cycle hidden in a function is still two modules that each need the other (issue #32)."""

from __future__ import annotations

import ast
from pathlib import Path

import localbench

PACKAGE = Path(localbench.__file__).parent

def _modules(root: Path) -> dict[str, Path]:
    """Module name -> file, for every module of the package under ``root`` (a package is its __init__)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _targets(node: ast.AST, here: str, is_package: bool, modules: dict[str, Path]) -> list[str]:
    """The package's modules an import statement names: the module, and each imported name that is one."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:  # relative: from the package this module is in (or is)
        pkg = here.split(".")
        pkg = pkg if is_package else pkg[:-1]
        pkg = pkg[:len(pkg) - node.level + 1]
        base = ".".join(pkg + ([base] if base else []))
    out = [base] if base in modules else []
    out += [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
    return out


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, at module level or inside a function (or under
    TYPE_CHECKING: the two modules still each name the other)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            edges.update(_targets(node, name, is_package, modules))
        graph[name] = {e for e in edges if e != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _path(graph: dict[str, set[str]], comp: list[str]) -> str:
    """One cycle through a component's first module, as "a → b → a"."""
    start, members = comp[0], set(comp)
    prev: dict[str, str] = {}
    todo = [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                chain = [v]
                while chain[-1] != start:
                    chain.append(prev[chain[-1]])
                return " → ".join([*reversed(chain), start])
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return " ↔ ".join(comp)


def test_no_import_cycles():
    graph = import_graph()
    found = [f"{', '.join(c)}: {_path(graph, c)}" for c in cycles(graph)]
    assert found == [], "import cycles:\n" + "\n".join(found)


def test_a_planted_cycle_is_named(tmp_path):
    """Two modules that import each other, one only inside a function, make a cycle the test names."""
    pkg = tmp_path / "localbench"
    (pkg / "slurm").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "slurm" / "__init__.py").write_text("")
    (pkg / "slurm" / "plan.py").write_text("def make():\n    from localbench.slurm.render import render\n")
    (pkg / "slurm" / "render.py").write_text("from .plan import make\n")
    (pkg / "leaf.py").write_text("import localbench.slurm\n")
    graph = import_graph(pkg)
    assert cycles(graph) == [["localbench.slurm.plan", "localbench.slurm.render"]]
    assert _path(graph, cycles(graph)[0]) == "localbench.slurm.plan → localbench.slurm.render → localbench.slurm.plan"
