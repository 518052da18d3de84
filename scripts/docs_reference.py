"""The docs site's generated reference pages (spec, presets, benchmark defaults, CLI), built from
the code itself so they cannot go stale.

Used as an MkDocs hook (mkdocs.yml `hooks:`): a page line `<!-- generated: NAME -->` is replaced
by the Markdown NAME renders (spec, presets, designs, cli). Run alone, it prints one:
`python scripts/docs_reference.py spec`.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import types
import typing
from typing import Any

MARKER = re.compile(r"^<!-- generated: (\w+)(?: (\w+))? -->$", re.MULTILINE)


def _field_comments(cls: type) -> dict[str, str]:
    """A model's field comments, as the results schema reads them (one parser for both)."""
    from localbench.results_schema import field_comments
    return field_comments(cls)


def _type_name(t: Any) -> str:
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin is not None:
        return f"{getattr(origin, '__name__', origin)}[{', '.join(_type_name(a) for a in args)}]"
    if t is type(None):
        return "None"
    return t.__name__ if isinstance(t, type) else str(t).replace("typing.", "")


def _default(field: Any) -> str:
    from pydantic_core import PydanticUndefined
    if field.default_factory is not None:
        v = field.default_factory()
        return "`{}`" if v == {} else f"`{v!r}`" if not hasattr(v, "model_dump") else "(see below)"
    if field.default is PydanticUndefined:
        return "required"
    return f"`{field.default!r}`"


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def model_table(cls: Any, prefix: str = "") -> str:
    """A table of a pydantic model's fields: name, type, default, what it is."""
    comments = _field_comments(cls)
    rows = ["| field | type | default | what |", "|---|---|---|---|"]
    for name, f in cls.model_fields.items():
        if f.exclude is True:
            continue
        rows.append(f"| `{prefix}{name}` | `{_cell(_type_name(f.annotation))}` | {_cell(_default(f))} | "
                    f"{_cell(comments.get(name, ''))} |")
    doc = inspect.cleandoc(cls.__doc__ or "")
    return f"{doc}\n\n" + "\n".join(rows) + "\n"


def spec() -> str:
    from localbench.spec import EngineOptions, RunSpec
    return (f"### `RunSpec` (the top level)\n\n{model_table(RunSpec)}\n"
            f"### `serving:` (`EngineOptions`)\n\n{model_table(EngineOptions, 'serving.')}")


def study() -> str:
    """The study file's fields (localbench/study/spec.py)."""
    from localbench.study.spec import BenchmarkPart, Study
    return (f"### `Study` (the top level)\n\n{model_table(Study)}\n"
            f"### `benchmarks.NAME:` (`BenchmarkPart`, besides its RunSpec fields)\n\n"
            f"{model_table(BenchmarkPart, 'benchmarks.NAME.')}")


def presets() -> str:
    from localbench.serving.presets import ModelSize, ModelSource, Preset
    return (f"### A preset file (`Preset`)\n\n{model_table(Preset)}\n"
            f"### `source:` (`ModelSource`)\n\n{model_table(ModelSource, 'source.')}\n"
            f"### `size:` (`ModelSize`)\n\n{model_table(ModelSize, 'size.')}")


def _axis(d: Any, kind: str) -> Any:
    return next(a for a in d.axes if a.kind == kind)


def designs() -> str:
    """Per benchmark: its conditions and categories, the defaults a spec file starts from, and what
    `localbench run` with no spec runs instead (the embedded default)."""
    from localbench.registry import design_of, registered
    from localbench.spec import RunSpec
    out = []
    for name in registered():
        try:
            d = design_of(name)
        except Exception:  # a plug-in that cannot load here is left out, not a broken page
            continue
        cond, cat = _axis(d, "condition"), _axis(d, "category")
        emb = dict(d.embedded_default)
        rounds = ", ".join(f"{k} {v}" for k, v in d.max_rounds.items())
        emb_rounds = ", ".join(f"{k} {v}" for k, v in emb.pop("max_rounds", {}).items())
        turn = RunSpec.model_fields["max_tokens"].default
        settings = ", ".join(f"`{k}`" for k in d.settings.model_fields)  # `localbench data design` describes each
        out.append(f"### {d.title} (`--benchmark {d.name}`)\n\n"
                   f"| | a spec file (RunSpec defaults) | `localbench run` without `--spec` (embedded default) |\n"
                   f"|---|---|---|\n"
                   f"| {cond.label.lower()}s (`conditions`) | {', '.join(cond.default)} (of {', '.join(cond.values)}) | "
                   f"{', '.join(emb.get('conditions', cond.default))} |\n"
                   f"| {cat.label.lower()} (`categories`) | all: {', '.join(cat.values)} | all |\n"
                   f"| scenarios per category (`limit`) | every one | {emb.get('limit', 'every one')} |\n"
                   f"| round limit (`max_rounds`) | {rounds} | {emb_rounds or rounds} |\n"
                   f"| tokens per agent turn (`max_tokens`) | {turn} | {emb.get('max_tokens', turn)} |\n"
                   f"| roles (`models`) | {', '.join(r.name for r in d.roles)} | the packaged model in every role |\n"
                   f"| its own settings (`extra`) | {settings or 'none'} | the same |\n")
    return "\n".join(out)


def _param_row(p: Any) -> str:
    argument = p.param_type_name == "argument"
    if argument:
        name = f"`{(p.metavar or p.name).upper()}`"
    else:
        name = " / ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
    default = "" if p.default is None or p.required or argument else f"`{p.default}`"
    if isinstance(p.default, bool) and not p.default and not p.secondary_opts:
        default = ""
    help_ = getattr(p, "help", None) or ""
    return f"| {name} | {_cell(help_)} | {'required' if p.required else default} |"


def _command(cmd: Any, path: list[str], out: list[str]) -> None:
    head = "#" * min(len(path) + 1, 4)
    doc = inspect.cleandoc(cmd.help or "").split("\n\n")
    out.append(f"{head} `{' '.join(path)}`\n\n" + "\n\n".join(x.replace("\n", " ") for x in doc) + "\n")
    params = [p for p in cmd.params if p.name != "help"]
    if params:
        out.append("| argument / option | what | default |\n|---|---|---|\n"
                   + "\n".join(_param_row(p) for p in params) + "\n")
    if getattr(cmd, "commands", None):  # a group (typer vendors its own click)
        for sub in sorted(cmd.commands):
            _command(cmd.commands[sub], [*path, sub], out)


def cli() -> str:
    import typer

    from localbench.cli import app
    root = typer.main.get_command(app)
    out: list[str] = []
    for name in root.commands:  # in the order `localbench --help` lists them
        _command(root.commands[name], ["localbench", name], out)
    return "\n".join(out)


CARDS = ("RTX4090-24GB", "L40S-48GB", "A100-40GB", "H100-80GB", "H200-141GB")


def fit() -> str:
    """Which shipped preset fits which card, as `localbench models --check-fit --gpu CARD` says:
    weights + the KV cache of one full-length sequence, on the preset's own GPU count."""
    from localbench.serving.fit import check_fit, gpu
    from localbench.serving.presets import list_presets
    rows = ["| preset | GPUs | " + " | ".join(CARDS) + " |", "|---|---|" + "---|" * len(CARDS)]
    for p in list_presets():
        if not p.needs_gpu:
            continue
        cells = []
        for card in CARDS:
            f = check_fit(p, gpu(card))
            cells.append("?" if f is None else f"fits ({f.sequences} seq.)" if f.fits else "no")
        rows.append(f"| `{p.name}` | {p.tensor_parallel_size * p.pipeline_parallel_size} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def examples() -> str:
    """Every spec in examples/, as it is in the repository."""
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent / "examples"
    return "\n".join(f"### `examples/{f.name}`\n\n```yaml\n{f.read_text().rstrip()}\n```\n"
                     for f in sorted(root.glob("*.yaml")))



def metrics(benchmark: str) -> str:
    """A benchmark's metric catalogue, as its design declares it (and its report's glossary shows)."""
    from localbench.registry import design_of
    d = design_of(benchmark)
    headline = {m: c for c, m in d.headline.items()}
    rows = ["| metric | better | headline of | what |", "|---|---|---|---|"]
    for m in d.metrics:
        if not getattr(m, "glossary", True):
            continue
        better = "higher" if m.higher_is_better else "lower"
        rows.append(f"| `{m.name}` | {better} | {headline.get(m.name, '')} | {_cell(m.description)} |")
    return "\n".join(rows) + "\n"


def _schema_type(p: dict[str, Any]) -> str:
    if "$ref" in p:
        return p["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in p:
        return " | ".join(_schema_type(x) for x in p["anyOf"])
    if p.get("type") == "array":
        return f"array[{_schema_type(p.get('items') or {})}]"
    if p.get("type") == "object" and isinstance(p.get("additionalProperties"), dict):
        return f"object[string → {_schema_type(p['additionalProperties'])}]"
    return str(p.get("type", "any"))


def _schema_table(schema: dict[str, Any]) -> str:
    required = set(schema.get("required") or [])
    rows = ["| field | type | required | default | what |", "|---|---|---|---|---|"]
    for name, p in (schema.get("properties") or {}).items():
        default = f"`{json.dumps(p['default'], ensure_ascii=False)}`" if "default" in p else ""
        rows.append(f"| `{name}` | `{_cell(_schema_type(p))}` | {'yes' if name in required else ''} | {_cell(default)} | "
                    f"{_cell(p.get('description', ''))} |")
    return "\n".join(rows) + "\n"


def results() -> str:
    """The shipped JSON Schema files of a run's results, one section per file and per nested object."""
    from localbench.results_schema import shipped
    out = []
    for name, schema in shipped().items():
        out.append(f"### `{schema['title']}` (`localbench/schemas/{name}`)\n\n{schema['description']}\n\n"
                   f"{_schema_table(schema)}")
        for sub, s in (schema.get("$defs") or {}).items():
            doc = " ".join((s.get("description") or "").split())
            out.append(f"#### `{sub}`\n\n{doc}\n\n{_schema_table(s)}")
    return "\n".join(out)


def expand(markdown: str) -> str:
    def one(m: re.Match[str]) -> str:
        return RENDER[m.group(1)](m.group(2)) if m.group(2) else RENDER[m.group(1)]()
    return MARKER.sub(one, markdown)


RENDER = {"spec": spec, "presets": presets, "designs": designs, "cli": cli, "fit": fit, "examples": examples,
          "metrics": metrics, "results": results, "study": study}


LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def repository_links(markdown: str, page_file: str, docs_dir: str) -> str:
    """A link from a docs page to a file of the repository outside docs/ (a preset, an example, a
    README) cannot be a link on the site: it becomes the file's repository path in code, after
    checking that the file exists, so such a link still cannot go stale."""
    from pathlib import Path
    docs = Path(docs_dir).resolve()
    root = docs.parent
    here = (docs / page_file).parent

    def one(m: re.Match[str]) -> str:
        text, target = m.group(1), m.group(2)
        if re.match(r"[a-z]+:", target):
            return m.group(0)
        path = (here / target).resolve()
        if path.is_relative_to(docs):
            return m.group(0)
        if not path.is_relative_to(root):
            raise ValueError(f"{page_file}: link to {target} points outside the repository")
        if not path.exists():
            raise ValueError(f"{page_file}: link to {target}: no such file in the repository")
        rel = path.relative_to(root).as_posix()
        return f"`{rel}`" if text.strip("`") in (rel, target, path.name) else f"{text} (`{rel}`)"

    return LINK.sub(one, markdown)


def on_page_markdown(markdown: str, page: Any = None, config: Any = None, **_: Any) -> str:
    """MkDocs hook: generated sections, and repository links checked and written as paths."""
    markdown = expand(markdown)
    if page is not None and config is not None:
        markdown = repository_links(markdown, page.file.src_uri, config["docs_dir"])
    return markdown


if __name__ == "__main__":
    print(RENDER[sys.argv[1]](*sys.argv[2:]))
