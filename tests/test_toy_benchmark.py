"""A third benchmark, registered from the tests only, through every stage and command.

tests/toy_benchmark/ declares its own axes (topic × tone), roles (teller, grader), metrics (SLR,
CHEER), one table and one figure; nothing under localbench/ names it. If a shared layer still
assumed AgentSocialBench (its levels, categories, metrics or roles), these runs would fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from localbench.runlog import RECORD_VERSION

TESTS = Path(__file__).resolve().parent
pytestmark = pytest.mark.usefixtures("toy_registered")  # its entry point installed (tests/conftest.py)


def cli(*args: str, check: bool = True, timeout: int = 300) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True,
                       timeout=timeout, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if check:
        assert r.returncode == 0, r.stderr[-3000:]
    return r


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_spec_and_flags_take_their_meaning_from_the_design(tmp_path):
    from localbench.commands.spec_flags import spec_from_flags
    from localbench.errors import UserError
    from localbench.spec import RunSpec, SpecError, load_spec

    spec = RunSpec(benchmark="toy")
    assert spec.conditions == ["open", "careful"]  # the toy's default tones, not a privacy ladder
    assert spec.models == {"teller": "smollm2-135m", "grader": None}
    assert spec.with_model("teller", "tiny-random").judge_model == "tiny-random"  # the grader defaults to the teller
    assert spec.max_rounds_for("trip") == 2
    with pytest.warns(UserWarning, match="no role 'agent'"):  # `agent` names the primary role, with a note
        assert load_spec(None, benchmark="toy", **{"models.agent": "x"}).models["teller"] == "x"
    with pytest.raises(SpecError, match="'CD' is not a topic of Toy secret-keeping"):
        load_spec(None, benchmark="toy", max_rounds={"CD": 3})
    with pytest.raises(SpecError, match="at least one tone is required"):
        load_spec(None, benchmark="toy", conditions=[])
    flags = spec_from_flags(None, benchmark="toy", agent="tiny-random", judge="tiny-b", max_rounds=3, embedded=True)
    assert flags.models == {"teller": "tiny-random", "grader": "tiny-b"}
    assert flags.max_rounds == {"gift": 3, "trip": 3} and flags.conditions == ["open", "careful"]
    assert spec_from_flags(None, benchmark="toy", model=["grader=tiny-b"]).judge_model == "tiny-b"
    with pytest.raises(UserError, match="expected ROLE=PRESET"):
        spec_from_flags(None, benchmark="toy", model=["grader"])


def test_run_then_each_stage_alone_give_the_same_scores(tmp_path, tiny_dir):
    """`run`, and `simulate` + `judge` + `score` + `report` on their own, on the tiny model."""
    cli("run", "--benchmark", "toy", "--agent", "tiny-random", "--out", str(tmp_path), "--run-id", "whole",
        "--no-progress")
    whole = tmp_path / "whole"
    scores = json.loads((whole / "scores.json").read_text())
    assert scores["benchmark"] == "toy"
    assert {(r["metric"], r["condition"]) for r in scores["rows"] if r["category"] == "gift"} == {
        ("SLR", "open"), ("SLR", "careful"), ("CHEER", "open"), ("CHEER", "careful")}
    assert {r["metric"]: r["higher_is_better"] for r in scores["rows"]} == {"SLR": False, "CHEER": True}
    assert {(c["metric"], c["a"], c["b"]) for c in scores["comparisons"]} == {("SLR", "open", "careful")}
    transcripts = jsonl(whole / "transcripts.jsonl")
    assert len(transcripts) == 8 and all(t["version"] == RECORD_VERSION and t["payload"]["friend"] for t in transcripts)
    judgments = jsonl(whole / "judgments.jsonl")
    assert {j["judge"] for j in judgments} == {"secret"} and all(j["failure"] is None for j in judgments)
    doc = yaml.safe_load((whole / "spec.yaml").read_text())
    assert doc["spec"]["models"] == {"teller": "tiny-random", "grader": None}
    assert doc["judge"]["model"] == "tiny-random" and doc["judge"]["temperature"] == 0.0
    assert list(doc["judge"]["rubrics"]) == [str(TESTS / "toy_benchmark" / "grade.j2")]  # its own rubric
    html = (whole / "report.html").read_text()
    assert "<h1>Toy secret-keeping report" in html and "Secrets kept by tone" in html
    assert "Secret leak rate by tone" in html and (whole / "figures" / "toy_tone.png").stat().st_size > 1000
    assert "secret leak rate: simulations whose notes revealed the secret" in html  # its glossary
    assert (whole / "tables" / "toy_tones.csv").exists()
    assert len(list((whole / "view" / "data" / "sims").glob("*.js"))) == 8  # its viewer, written by `run`
    _the_viewer_shows_a_toy_simulation(whole)

    common = ["--benchmark", "toy", "--agent", "tiny-random", "--out", str(tmp_path), "--run-id", "staged",
              "--max-rounds", "1", "--no-progress"]
    cli("simulate", *common)
    staged = tmp_path / "staged"
    before = (staged / "transcripts.jsonl").read_text()
    cli("simulate", *common)  # a rerun resumes: every simulation is there, none is played again
    assert (staged / "transcripts.jsonl").read_text() == before
    cli("score", str(staged))  # before judging: every simulation is unscored, and the note says what finishes it
    notes = json.loads((staged / "scores.json").read_text())["notes"]
    assert any("8 simulations have no leakage score: the grader has not read these notes "
               f"(`localbench judge {staged}` finishes it)" in n for n in notes), notes
    cli("judge", str(staged))
    cli("score", str(staged))
    cli("report", str(staged))
    again = json.loads((staged / "scores.json").read_text())
    assert again["rows"] == scores["rows"] and again["comparisons"] == scores["comparisons"]


def test_nothing_outside_its_folder_names_it():
    """Adding the toy touched no file of localbench: the package, its packaging and the folders users
    edit never name it (its entry point is its own distribution's, tests/toy_benchmark/__init__.py)."""
    import re

    root = TESTS.parent
    word = re.compile(r"\b(toy_benchmark|ToySecrets|toy)\b", re.IGNORECASE)
    files = [root / "pyproject.toml", root / "Makefile", *(p for d in ("localbench", "serving", "judges", "scenarios",
                                                                      "slurm", "scripts") for p in (root / d).rglob("*"))]
    named = [f"{p.relative_to(root)}:{n}" for p in files if p.is_file() and p.suffix not in (".png", ".pyc", ".gz")
             for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if word.search(line) and "toy 8×16 probe" not in line]  # the one unrelated "toy" (serving/hf/linear.py)
    assert named == []


def _the_viewer_shows_a_toy_simulation(run: Path) -> None:
    """The shared viewer, with the toy's own axes, participants, secret and labels."""
    from browser import page

    with page() as pg:
        pg.goto((run / "view" / "index.html").resolve().as_uri())
        assert pg.text_content("#count").startswith("8 of 8 simulations shown")
        assert "Topic" in pg.text_content("#list thead") and "Tone" in pg.text_content("#list thead")
        pg.select_option("select[data-filter=category]", "trip")
        assert pg.text_content("#count").startswith("4 of 8")
        pg.locator("#list tbody tr a").first.click()
        pg.wait_for_selector("section.sim")
        assert "rented a cabin by the lake" in pg.text_content("table.items")  # the first trip scenario by key
        assert pg.locator("table.labels tbody tr").count() == 1 and "secret" in pg.text_content("table.labels")
        assert pg.problems == []


def test_rejudge_gold_eval_data_check_and_slurm(tmp_path, tiny_dir):
    cli("run", "--benchmark", "toy", "--agent", "tiny-random", "--out", str(tmp_path), "--run-id", "r",
        "--categories", "gift", "--conditions", "careful", "--no-progress")
    run = tmp_path / "r"
    cli("judges", "rejudge", str(run), "--judges", "tiny-random")
    rj = run / "judges" / "tiny-random"
    assert json.loads((rj / "rejudge.json").read_text())["calls"] == 2
    assert {r["metric"] for r in json.loads((rj / "scores.json").read_text())["rows"]} == {"SLR"}  # leakage only

    gold = tmp_path / "gold.jsonl"
    cli("judges", "gold", "build", "--from", "builtin", "--benchmark", "toy", "--out", str(gold),
        "--methods", "verbatim,absent", "--allow-weak-gold")  # a substring rule passes it: refused unless asked
    items = jsonl(gold)
    assert len(items) == 8 and {i["item"]["owner"] for i in items} == {"Ada", "Cy", "Eve", "Gus"}
    ev = tmp_path / "ev"
    cli("judges", "eval", "--judges", "tiny-random", "--gold", str(gold), "--out", str(ev), "--benchmark", "toy")
    config = json.loads((ev / "eval.json").read_text())
    assert config["benchmark"] == "toy" and config["rubric"].endswith("grade.j2") and config["judge_metrics"] == "SLR"
    assert len(jsonl(ev / "judgments.jsonl")) == 8

    out = cli("data", "check", "builtin", "--benchmark", "toy").stdout
    assert "gift" in out and "trip" in out
    out = cli("data", "design", "--benchmark", "toy").stdout
    assert "Toy secret-keeping" in out and "SLR" in out and "settings" not in out  # it declares none

    spec = tmp_path / "study.yaml"
    spec.write_text(yaml.safe_dump({"benchmark": "toy", "models": {"teller": "tiny-random", "grader": "smollm2-135m"},
                                    "out": str(tmp_path / "runs"), "num_shards": 2}))
    dry = cli("slurm", "submit", str(spec), "--dry-run").stdout
    assert "#SBATCH --array=0-1" in dry and "localbench slurm merge" in dry
    assert "lb_step judge" in dry and "lb_step report" in dry
