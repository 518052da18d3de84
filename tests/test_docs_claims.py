"""Claims the user guide makes about what the code does, each checked against the code (issue 47):
a shown command prints what the page shows, the shipped presets' table states their parallel
sizes, which runs hold two models and how their CIs are made."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
USER_TEXTS = [ROOT / "README.md", *sorted(DOCS.rglob("*.md")), *sorted((ROOT / "examples").glob("*.yaml")),
              *sorted((ROOT / "notebooks").glob("*.ipynb"))]
LOCALBENCH = str(Path(sys.prefix) / "bin" / "localbench")

SHOWN_OUTPUT = re.compile(r"^```\n\$ localbench (?P<args>[^\n]+)\n(?P<output>.*?)^```", re.MULTILINE | re.DOTALL)
"""A code block that shows a command (`$ localbench ...`) and, below it, what it prints."""


def shown_outputs() -> list[tuple[str, str, str]]:
    return [(f"{p.relative_to(ROOT)}#{i}", m["args"], m["output"]) for p in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
            for i, m in enumerate(SHOWN_OUTPUT.finditer(p.read_text()))]


def test_the_guide_shows_command_output_somewhere():
    assert shown_outputs(), "no block shows a command with its output (the pattern below would check nothing)"


@pytest.mark.parametrize("where,args,output", shown_outputs(), ids=[w for w, _, _ in shown_outputs()])
def test_a_shown_command_prints_what_the_page_shows(where, args, output):
    """docs/hpc.md quoted `check-fit`'s output as two lines when the command prints three (issue 47,
    item 13): a page that shows a command's output shows all of it, as the command prints it now."""
    r = subprocess.run([LOCALBENCH, *shlex.split(args)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{where}: {r.stderr[-2000:]}"
    assert r.stdout.splitlines() == output.splitlines(), f"{where}: `localbench {args}` prints\n{r.stdout}"


def _shipped_preset_rows() -> dict[str, str]:
    """The shipped presets' table of docs/models.md: preset name -> the row's description."""
    text = (DOCS / "models.md").read_text()
    table = text.split("## Shipped presets", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 2:
            for name in re.findall(r"`([\w.-]+)`", cells[0]):
                rows[name] = cells[1]
    return rows


def test_the_shipped_presets_table_states_each_presets_gpus_and_parallel_sizes():
    """docs/models.md said the 70B preset runs on 8 GPUs with tensor parallel 4 × pipeline parallel 2,
    when the preset is tensor parallel 4 on one node (issue 47, item 3). A row's first "on N GPUs"
    and first parenthesised parallel sizes are the preset's own; a row without them is one GPU."""
    from localbench.serving.presets import load_preset

    rows = _shipped_preset_rows()
    shipped = {p.stem for p in (ROOT / "serving").glob("*.yaml")}
    assert {n for n in rows if n in shipped}, "the table names no shipped preset"
    for name, what in rows.items():
        if name not in shipped:
            continue
        p = load_preset(name)
        gpus = p.tensor_parallel_size * p.pipeline_parallel_size * p.data_parallel_size
        stated = re.search(r"\bon (\d+) GPUs\b", what)
        assert (int(stated.group(1)) if stated else 1) == gpus, f"{name}: {what}"
        sizes = re.search(r"\(tensor parallel (\d+)(?: × pipeline parallel (\d+))?\)", what)
        if sizes or gpus > 1:
            assert sizes, f"{name}: {what} (states no parallel sizes)"
            assert (int(sizes.group(1)), int(sizes.group(2) or 1)) == (p.tensor_parallel_size,
                                                                       p.pipeline_parallel_size), f"{name}: {what}"


def test_a_planted_run_holds_two_models_compared_with_the_sign_flip_test(tmp_path):
    """docs/reproducibility.md and docs/asb.md name the planted run as the run that holds two models
    and compares them on the same scenarios with the sign-flip test (issue 47, item 6)."""
    from typer.testing import CliRunner

    from localbench.cli import app
    from localbench.scores import Scores

    run = tmp_path / "planted"
    for args in (["judges", "plant-run", "--out", str(run), "--models", "low:0.2,high:0.8"],
                 ["judges", "rejudge", str(run), "--judges", "oracle"]):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
    scores = Scores.model_validate_json((run / "judges" / "oracle" / "scores.json").read_text())
    between_models = [c for c in scores.comparisons if {c.a, c.b} == {"low", "high"}]
    assert between_models and {c.test for c in between_models} == {"sign-flip"}
    assert all(c.n_pairs > 0 for c in between_models)


def test_comparing_runs_of_two_models_is_documented_where_the_guide_mentions_it():
    """Comparisons across runs (`localbench compare`, issue 44 item 4) exist: docs/reproducibility.md
    and docs/asb.md say how to use it, and no page says it is still to come."""
    from localbench.cli import app

    assert "compare" in typer.main.get_command(app).commands
    for page in ("reproducibility.md", "asb.md"):
        text = (DOCS / page).read_text()
        assert "localbench compare" in text and "not built yet" not in text, page


def test_a_ci_resamples_scenarios_with_each_scenarios_seeds_averaged_first():
    """The guide's CIs are over scenarios, each scenario's seeds averaged first (issue 47, item 7): three
    seeds of two scenarios make a CI of n 2 around the mean of the two scenario means."""
    from localbench.registry import design_of
    from localbench.runlog.records import ScenarioScore
    from localbench.scoring import aggregate

    values = {"s1": [0.0, 0.0, 1.0], "s2": [1.0, 1.0, 1.0]}
    records = [ScenarioScore(key=f"{s}|L0|{i}", scenario=s, category="CD", condition="L0", seed_index=i, model="m",
                             judge="j", metrics={"CDLR": v}) for s, vs in values.items() for i, v in enumerate(vs)]
    row = next(r for r in aggregate(records, design_of("asb"), "run", "j").rows
               if r.metric == "CDLR" and r.category == "CD")
    scenario_means = [sum(vs) / len(vs) for vs in values.values()]
    assert row.n == len(values) and row.mean == pytest.approx(sum(scenario_means) / len(scenario_means))


def test_no_text_says_the_cis_are_over_seeds():
    """examples/asb-ladder-8b.yaml said "CIs over seeds" and docs/reproducibility.md "CIs over
    scenarios and seeds" (issue 47, item 7): seeds are averaged before the bootstrap, never resampled."""
    over_seeds = re.compile(r"CIs? over (?:scenarios and )?seeds", re.IGNORECASE)
    said = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in USER_TEXTS for m in over_seeds.finditer(p.read_text())]
    assert said == []


def test_spec_yaml_names_the_preset_every_role_ran_with_and_the_run_id_stays(tmp_path):
    """docs/reproducibility.md and getting-started said spec.yaml has "every default filled in" while
    its `models` kept `user_sim: null, judge: null` (issue 47, item 12). The recorded spec now names
    the preset of every role beside `spec` (the section the docs name), and `spec` itself is the one
    the run id hashes, so no run id moves; writing it again on a resume keeps both."""
    import yaml

    from localbench.runlog.rundir import RESOLVED_MODELS, RunDir
    from localbench.spec import parse_spec

    spec = parse_spec({"benchmark": "asb", "models": {"agent": "tiny-random"}})
    run_id = spec.content_hash()
    rd = RunDir(tmp_path / "run")
    for _ in range(2):  # the first write, then a resume
        rd.write_spec(spec, {RESOLVED_MODELS: {"agent": "stale"}})
        doc = yaml.safe_load(rd.spec_file.read_text())
        assert doc["spec"]["models"] == {"agent": "tiny-random", "user_sim": None, "judge": None}
        assert doc[RESOLVED_MODELS] == {"agent": "tiny-random", "user_sim": "tiny-random", "judge": "tiny-random"}
        assert parse_spec(doc["spec"], recorded=True).content_hash() == run_id
    for page in ("reproducibility.md", "getting-started.md", "reference/spec.md"):
        assert f"`{RESOLVED_MODELS}`" in (DOCS / page).read_text(), page


def test_the_pages_that_say_the_report_warns_about_an_unmeasured_judge_are_true():
    """Issue 47 item 4, issue 45 item 3: the getting-started and AgentSocialBench pages say the run
    report warns about a judge never measured against gold and marks its numbers; the report's code
    words that warning and that mark, and its templates hold the section the pages name."""
    from localbench.report.tables import FLAG_READINGS, UNMEASURED_MARK
    from localbench.report.trust import TITLE
    from localbench.scores import UNMEASURED

    assert "never measured against gold" in FLAG_READINGS[UNMEASURED]
    templates = ROOT / "localbench" / "report" / "templates"
    assert all("trust.title" in (templates / t).read_text() for t in ("report.md.j2", "report.html.j2"))
    for page in ("getting-started.md", "asb.md"):
        text = " ".join((DOCS / page).read_text().split())
        assert TITLE in text and "never measured" in text and UNMEASURED_MARK in text, page


def test_no_page_says_the_run_report_corrects_rates_unless_it_does():
    """Issue 47, item 5: corrected (Rogan-Gladen) rates are shown by `judges report --run`, not by
    the run report; no page may say the report corrects them until the report code does."""
    claim = re.compile(r"the report corrects|report corrects the", re.I)
    code = "\n".join(p.read_text() for p in (ROOT / "localbench" / "report").rglob("*.py"))
    if re.search(r"rogan|corrected", code, re.I):
        return
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert [str(p.relative_to(ROOT)) for p in pages if claim.search(p.read_text())] == []


def test_every_extra_a_page_names_is_one_pyproject_declares():
    """Issue 47, item 11: "the `vllm` extra" where the install uses the `gpu` one; a page may name
    only extras that exist, and the GPU install's is the one scripts/install.sh installs."""
    import tomllib

    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    named = {(str(p.relative_to(ROOT)), m.group(1)) for p in pages
             for m in re.finditer(r"the `([\w-]+)` extra", p.read_text())}
    assert {(page, x) for page, x in named if x not in extras} == set()
    gpu_page = (ROOT / "docs" / "running-on-gpu.md").read_text()
    assert "the `gpu` extra" in gpu_page and ".[hf,analysis,data,gpu]" in (ROOT / "scripts" / "install.sh").read_text()
