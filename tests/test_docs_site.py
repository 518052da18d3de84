"""The docs site (issue 35): `mkdocs build --strict` passes (a broken link, a missing page or a
nav entry without its file fails), the generated reference pages hold every field and command
the code has, no page points outside the repository, and the screenshots were made with the
current report and viewer templates."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


reference = _load("docs_reference", ROOT / "scripts" / "docs_reference.py")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


def test_the_site_builds_strict_with_every_user_guide_page(site):
    for page in ["getting-started", "running-on-gpu", "hpc", "asb", "agentleak", "sopri", "judges", "scenarios",
                 "models", "examples", "reproducibility", "faq", "cite", "reference/spec", "reference/cli",
                 "dev/performance", "dev/benchmarks"]:
        assert (site / page / "index.html").is_file(), page


def test_the_spec_reference_lists_every_field_with_its_default(site):
    from localbench.spec import EngineOptions, RunSpec
    html = (site / "reference" / "spec" / "index.html").read_text()
    for name in RunSpec.model_fields:
        assert f"<code>{name}</code>" in html, name
    for name in EngineOptions.model_fields:
        assert f"<code>serving.{name}</code>" in html, name
    assert "<code>200</code>" in html  # max_tokens' default, from the model itself
    # the embedded default's hidden settings are stated: ASB's limit 1, L0 and L2, 3 rounds
    assert "CD 3, MC 3, CU 3, GC 3, HS 3, CM 3, AM 3" in html and "L0, L2" in html
    assert "| tokens per agent turn (`max_tokens`) | 200 | 160 |" in reference.designs()  # ASB's shorter turns


def test_every_spec_field_is_described_by_its_own_text():
    """The spec reference's "what" column is each field's own comment: one comment above two fields
    described the first with the text of both and left the second blank (issue 47, item 10), so
    every field must have a description, no two alike, and a timeout names its own flag only."""
    from localbench.spec import EngineOptions, RunSpec
    for cls in (RunSpec, EngineOptions):
        described = reference._field_comments(cls)
        assert [n for n in cls.model_fields if not described.get(n)] == [], cls.__name__
        texts = [described[n] for n in cls.model_fields]
        assert len(set(texts)) == len(texts), cls.__name__
    serving = reference._field_comments(EngineOptions)
    flags = {"request_timeout_s": "--request-timeout", "first_byte_timeout_s": "--first-byte-timeout"}
    for field, flag in flags.items():
        others = [f for f in flags.values() if f != flag]
        assert flag in serving[field] and not any(f in serving[field] for f in others), field


def test_the_cli_reference_lists_every_command_and_option(site):
    from localbench.cli import app
    html = (site / "reference" / "cli" / "index.html").read_text()
    root = typer.main.get_command(app)

    def walk(cmd, path):
        assert f"<code>{' '.join(path)}</code>" in html, path
        for p in cmd.params:
            for o in p.opts:
                if o.startswith("--") and o != "--help":
                    assert f"<code>{o}</code>" in html, (path, o)
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, [*path, name])

    for name, cmd in root.commands.items():
        walk(cmd, ["localbench", name])


def test_the_presets_reference_lists_every_field(site):
    from localbench.serving.presets import ModelSource, Preset
    html = (site / "models" / "index.html").read_text()
    for name in Preset.model_fields:
        if name != "file":
            assert f"<code>{name}</code>" in html, name
    for name in ModelSource.model_fields:
        assert f"<code>source.{name}</code>" in html, name


def test_a_link_out_of_the_docs_is_checked_and_a_missing_target_fails(tmp_path):
    md = "See [the preset](../serving/qwen3-8b.yaml) and [x](../serving/no-such.yaml)."
    with pytest.raises(ValueError, match="no-such.yaml: no such file"):
        reference.repository_links(md, "models.md", str(DOCS))
    ok = reference.repository_links("See [the preset](../serving/qwen3-8b.yaml).", "models.md", str(DOCS))
    assert ok == "See the preset (`serving/qwen3-8b.yaml`)."
    with pytest.raises(ValueError, match="outside the repository"):
        reference.repository_links("[DESIGN](../../shared/DESIGN.md)", "models.md", str(DOCS))




def test_no_user_page_points_outside_the_repository():
    pages = [*DOCS.rglob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "examples"]
    offenders = set()
    for p in pages:
        for f in ([p] if p.is_file() else sorted(p.glob("*"))):
            if re.search(r"\.\./shared\b|/work/", f.read_text()):
                offenders.add(f.relative_to(DOCS).as_posix() if f.is_relative_to(DOCS) else f.name)
    assert not offenders, f"pages that point outside the repository: {sorted(offenders)}"


def test_the_screenshots_were_made_with_the_current_templates():
    shots = _load("screenshots", ROOT / "scripts" / "screenshots.py")
    manifest = json.loads((DOCS / "img" / "screenshots.json").read_text())
    assert manifest["templates_sha256"] == shots.templates_hash(), (
        "the report or viewer templates changed since docs/img/ was made: run `make screenshots`")
    for name in ["report.png", "viewer-list.png", "viewer-simulation.png", "viewer-compare.png"]:
        assert (DOCS / "img" / name).stat().st_size > 10_000, name
