"""The results schema: JSON Schema files for a run's scores.json and scenario_scores.jsonl, generated
from the pydantic models that write and read them (``scores.Scores``, ``runlog.ScenarioScore``) and
shipped in the package (localbench/schemas/), so a reader outside Python validates a run's results
against the same definition localbench uses.

Each field's description is the comment that documents it in the model's source (the way localbench
documents its models), so the schema and docs/reference/results.md say what the code says.
Regenerate after changing a model: ``python -m localbench.results_schema`` (tests/test_results_schema.py
fails while a shipped file differs from what the code generates).
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
import textwrap
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel

SCHEMA_DIR = Path(__file__).parent / "schemas"
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def field_comments(cls: type) -> dict[str, str]:
    """The comment on a field's line (after `#`) and the comment lines just above it: how the
    models in localbench document their fields (this class's own fields, not its bases')."""
    src = textwrap.dedent(inspect.getsource(cls))
    lines = src.splitlines()
    out: dict[str, str] = {}
    for node in ast.parse(src).body[0].body:  # type: ignore[attr-defined]
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        above = []
        i = node.lineno - 2
        while i >= 0 and lines[i].strip().startswith("#"):
            above.insert(0, lines[i].strip().lstrip("#").strip())
            i -= 1
        end = lines[node.end_lineno - 1]  # type: ignore[operator]
        trailing = end.split("  # ", 1)[1].strip() if "  # " in end else ""
        out[node.target.id] = " ".join(x for x in (" ".join(above), trailing) if x)
    return out


def _models() -> dict[str, tuple[type[BaseModel], str, str]]:
    """File name -> (model, the run file it describes, how the file holds it)."""
    from localbench.runlog import RunFiles, ScenarioScore
    from localbench.scores import Scores

    return {"scores.schema.json": (Scores, RunFiles.SCORES, "one JSON object"),
            "scenario_score.schema.json": (ScenarioScore, RunFiles.SCENARIO_SCORES, "one JSON object per line")}


def _describe(schema: dict[str, Any], model: type[BaseModel], defs: dict[str, Any] | None = None) -> None:
    """Each property's description from its field's comment (walking the model's bases), and each
    nested model's the same way, at any depth (every nested model is in the root's ``$defs``)."""
    defs = schema.get("$defs") or {} if defs is None else defs
    comments: dict[str, str] = {}
    for base in reversed(model.__mro__):
        if isinstance(base, type) and issubclass(base, BaseModel) and base is not BaseModel:
            comments.update(field_comments(base))
    for name, prop in (schema.get("properties") or {}).items():
        if comments.get(name):
            prop["description"] = comments[name]
    for name, f in model.model_fields.items():
        nested = [a for a in _model_args(f.annotation)]
        for sub in nested:
            sub_schema = defs.get(sub.__name__)
            if sub_schema is not None:
                _describe(sub_schema, sub, defs)


def _model_args(t: Any) -> list[type[BaseModel]]:
    import typing

    if isinstance(t, type) and issubclass(t, BaseModel):
        return [t]
    return [m for a in typing.get_args(t) for m in _model_args(a)]


def generate() -> dict[str, dict[str, Any]]:
    """File name -> its JSON Schema, as the code defines it now."""
    from localbench.scores import SCORES_VERSION
    from localbench.runlog import RECORD_VERSION

    out = {}
    for name, (model, run_file, holds) in _models().items():
        schema = model.model_json_schema(mode="validation")
        _describe(schema, model)
        for sub in schema.get("$defs", {}).values():
            sub.pop("title", None)
        version = SCORES_VERSION if run_file.endswith(".json") else RECORD_VERSION
        schema = {"$schema": DIALECT, "$id": f"https://localbench/schemas/{name}", "title": run_file,
                  "description": " ".join([f"{run_file} ({holds}), format version {version}.",
                                           _doc(model)]).strip(),
                  **{k: v for k, v in schema.items() if k not in ("title", "description")}}
        out[name] = schema
    return out


def _doc(model: type[BaseModel]) -> str:
    """The model's docstring, else its module's (scores.py says what scores.json is), on one line."""
    return " ".join(inspect.cleandoc(model.__doc__ or sys.modules[model.__module__].__doc__ or "").split())


def dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=1, ensure_ascii=False) + "\n"


def shipped() -> dict[str, dict[str, Any]]:
    """File name -> the schema installed with the package."""
    root = resources.files("localbench") / "schemas"
    return {name: json.loads((root / name).read_text(encoding="utf-8")) for name in _models()
            if (root / name).is_file()}


def write(directory: Path = SCHEMA_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, schema in generate().items():
        (directory / name).write_text(dumps(schema), encoding="utf-8")
        paths.append(directory / name)
    return paths


if __name__ == "__main__":
    for p in write(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_DIR):
        print(p)
