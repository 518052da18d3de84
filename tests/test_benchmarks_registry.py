"""Benchmarks are found through their entry points and reached only through the contract."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from localbench.benchmarks import Benchmark
from localbench.errors import UserError
from localbench.registry import get_benchmark, registered


@pytest.mark.parametrize("name", sorted(registered()))
def test_every_registered_benchmark_implements_the_protocol(name):
    bm = get_benchmark(name)
    assert isinstance(bm, Benchmark)
    assert bm.name == name == bm.design.name
    assert bm.rubric_files(), "a benchmark's judge stage records its rubrics' hashes"
    assert all(p.exists() for p in bm.rubric_files())
    d = bm.design
    assert set(bm.leakage_judges) and set(d.headline)
    assert d.categories and set(d.headline) <= set(d.categories)
    assert set(d.max_rounds) == set(d.categories), "every category has a round limit"
    assert all(d.is_leakage(m) for m in d.headline.values()), "a headline metric is a leakage metric"
    assert bm.report_plan().tables, "a report shows at least one table of the benchmark's own"


def test_max_rounds_flag_limits_every_category_of_the_specs_benchmark(tmp_path):
    """`--max-rounds N` means N for each category the spec's benchmark has, over a file or the defaults."""
    from localbench.commands.spec_flags import spec_from_flags

    design = get_benchmark("asb").design
    every = {c: 3 for c in design.categories}
    assert len(every) == 7
    assert spec_from_flags(None, max_rounds=3, embedded=True).max_rounds == every
    assert spec_from_flags(None, embedded=True).max_rounds == design.embedded_default["max_rounds"]
    f = tmp_path / "spec.yaml"
    f.write_text("benchmark: asb\nmax_rounds: {CD: 9}\n")
    assert spec_from_flags(f).max_rounds == {"CD": 9}
    assert spec_from_flags(f, max_rounds=3).max_rounds == every


def test_data_check_reaches_the_benchmark_by_name(tmp_path):
    from typer.testing import CliRunner

    from localbench.cli import app

    r = CliRunner().invoke(app, ["data", "check", "builtin", "--benchmark", "asb"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "14 files: 14 loaded, ok" in r.output, r.output
    assert "paper" not in r.output, "the reference column is the upstream release's only"
    r = CliRunner().invoke(app, ["data", "check", "builtin", "--benchmark", "nope"])
    assert r.exit_code != 0


def test_the_built_in_benchmarks_register_through_entry_points():
    """localbench's own pyproject.toml declares them in the group another package would use."""
    import tomllib
    from pathlib import Path

    from localbench.registry import GROUP

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    declared = project["entry-points"][GROUP]
    assert set(declared) == {"asb", "agentleak", "agentleak-traces", "sopri"}
    assert {n: ep.value for n, ep in registered().items() if n in declared} == declared


def test_a_distribution_on_the_path_registers_a_benchmark(toy_registered):
    """The test-only benchmark is found the way an installed package's is: its dist-info's entry point."""
    assert registered()["toy"].value == "toy_benchmark.plugin:ToySecrets"
    assert get_benchmark("toy").design.title == "Toy secret-keeping"


def test_unknown_benchmark_names_the_registered_ones():
    with pytest.raises(UserError, match=r"unknown benchmark 'nope' \(registered: agentleak, agentleak-traces, asb, sopri\)"):
        get_benchmark("nope")


def test_asb_plugin_loads_and_scores_through_the_protocol():
    """The pipeline's view of ASB: scenarios by id, categories, leakage metrics, gold from scenarios."""
    bm = get_benchmark("asb")
    scenarios = bm.load_scenarios("builtin", ["CD", "GC"], 1)
    assert [bm.category_of(s) for s in scenarios.values()] == ["CD", "GC"]
    assert bm.design.is_leakage("CDLR_full") and bm.design.is_leakage("CER")
    assert not bm.design.is_leakage("TCQ") and not bm.design.is_leakage("IAS")
    items = bm.build_gold(scenarios.values(), methods=["verbatim"])
    assert items and {it.scenario for it in items} <= set(scenarios)
    assert bm.consequence_notes({"CD"}) == [] and bm.consequence_notes({"CD", "GC"})


def test_cli_rejects_an_unknown_benchmark_in_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "localbench.cli", "judges", "gold", "build", "--from", "builtin",
                        "--out", str(tmp_path / "g.jsonl"), "--benchmark", "nope"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "unknown benchmark 'nope'" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "g.jsonl").exists()


def test_an_eval_directory_keeps_to_one_benchmarks_judge(tmp_path):
    """Answers of two benchmarks' judges never mix in one eval directory; the rubric is recorded."""
    from localbench.judging.gold_eval import EvalConfig, prepare
    from localbench.judging.gold import write_gold

    bm = get_benchmark("asb")
    gold = tmp_path / "gold.jsonl"
    write_gold(gold, bm.build_gold(bm.load_scenarios("builtin", ["CD"], 1).values(), methods=["verbatim"]))
    cfg = EvalConfig(judges=["a"])
    prepare(gold, tmp_path / "ev", cfg, bm.item_judge)
    assert (cfg.benchmark, cfg.rubric, cfg.judge_metrics) == ("asb", bm.item_judge.rubric, bm.item_judge.metrics)
    with pytest.raises(UserError, match="'asb' benchmark's judge, not 'other'"):
        prepare(gold, tmp_path / "ev", EvalConfig(judges=["a"], benchmark="other"), bm.item_judge)


def test_a_benchmarks_own_settings_are_typed_and_checked_when_the_spec_is_read(toy_registered):
    """``extra`` is the benchmark's declared settings model: a misspelt, misplaced or out-of-range
    setting is an error naming it before anything runs; a good one reads typed, and the spec keeps
    what was given (so its hash, and its run id, are what they were)."""
    from typer.testing import CliRunner

    from localbench.cli import app
    from localbench.spec import SpecError, load_spec

    spec = load_spec(None, benchmark="sopri", extra={"route_budget": 5})
    assert spec.settings.route_budget == 5 and spec.settings.max_inferences == 12 and spec.extra == {"route_budget": 5}
    assert load_spec(None, benchmark="asb").settings.message_max_chars is None
    with pytest.raises(SpecError, match=r"field 'extra.route_budget': Input should be greater than or equal to 0"):
        load_spec(None, benchmark="sopri", extra={"route_budget": -1})
    with pytest.raises(SpecError, match=r"field 'extra': 'text_max_chars' is not a setting of AgentSocialBench "
                                        r"\(its settings: message_max_chars"):  # AgentLeak's setting, given to ASB
        load_spec(None, benchmark="asb", extra={"text_max_chars": 100})
    with pytest.raises(SpecError, match=r"field 'extra.judge'"):
        load_spec(None, benchmark="sopri", extra={"judge": "regex"})
    with pytest.raises(SpecError, match=r"'anything' is not a setting of Toy secret-keeping \(its settings: none"):
        load_spec(None, benchmark="toy", extra={"anything": 1})
    r = CliRunner().invoke(app, ["data", "design", "--benchmark", "sopri"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "extra.route_budget" in r.output and "integer ≥ 0" in r.output, r.output


def test_a_recorded_spec_keeps_a_setting_its_benchmark_no_longer_declares(tmp_path):
    """A run made before a setting was dropped still reads (score, report, view): its spec.yaml's
    unknown setting is kept, unread; a new spec naming it is refused."""
    from localbench.pipeline import spec_of
    from localbench.spec import SpecError, load_spec

    run = tmp_path / "old-run"
    run.mkdir()
    (run / "spec.yaml").write_text(yaml.safe_dump({"spec": {"benchmark": "sopri", "extra": {
        "slot_judge": "model", "route_budget": 7}}}))
    spec = spec_of(run)
    assert spec.extra == {"route_budget": 7, "slot_judge": "model"} and spec.settings.route_budget == 7
    study = tmp_path / "study.yaml"  # the same settings in a spec file for a new run
    study.write_text(yaml.safe_dump({"benchmark": "sopri", "extra": {"slot_judge": "model"}}))
    with pytest.raises(SpecError, match="'slot_judge' is not a setting of SopriBench"):
        load_spec(study)


def _declared_texts(design) -> list[str]:
    """Every description a benchmark's design gives `localbench data design` to print: its axes,
    roles (and their rule judges), metrics and settings."""
    texts = [a.help or "" for a in design.axes]
    texts += [r.description for r in design.roles] + [t for r in design.roles for t in r.rules.values()]
    texts += [m.description for m in design.metrics]
    texts += [p.get("description", "") for p in design.settings.model_json_schema().get("properties", {}).values()]
    return texts


@pytest.mark.parametrize("name", sorted(registered()))
def test_a_command_a_design_names_is_a_command_of_the_cli(name):
    """A design that tells the user to run `judges plant` when the command is `judges plant-run`
    (issue 47, item 9) sends them to an error: each backticked command a design's descriptions
    name must walk the CLI's real command tree, group by group."""
    import re

    import typer

    from localbench.cli import app

    root = typer.main.get_command(app)
    named = [m.group(1).split() for text in _declared_texts(get_benchmark(name).design)
             for m in re.finditer(r"`(?:localbench )?([a-z][\w-]*(?: [a-z][\w-]*)*)[^`]*`", text)]
    commands = [words for words in named if words[0] in root.commands]
    for words in commands:
        cmd = root
        for word in words:
            if not getattr(cmd, "commands", None):
                break
            assert word in cmd.commands, f"{name}: `{' '.join(words)}`: no command '{word}' (has {sorted(cmd.commands)})"
            cmd = cmd.commands[word]
