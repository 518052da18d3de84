"""Gold for every judge behind a headline metric (issue 45 item 1).

Each judge's gold is built from the shipped suite (a few scenarios), passes the cue and cheater
checks (null models included), and a planted weak set of each judge is refused. `judges eval` asks
each judge with the call a run makes: a scripted judge answering the real prompts in the real
schema (from the gold label, or always "positive") checks the scoring with known answers; the
tiny random model goes through the real engine and every answer is schema-valid or a recorded
failure. A multi-judge eval writes one report section per judge.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fakes import ScriptedBackend
from localbench.cli import app
from localbench.errors import UserError
from localbench.judging.cheaters import body, tokens
from localbench.judging.gold import GoldError, label_space, read_gold, write_gold
from localbench.judging.gold_eval import EvalConfig, load_eval, run_eval
from localbench.judging.goldcheck import check_gold, leak_view
from localbench.judging.judge_gold import gold_judges_of
from localbench.judging.reliability import judge_reliability
from localbench.registry import get_benchmark
from localbench.serving.client import StructuredClient

pytestmark = pytest.mark.timeout(600)

# (benchmark, judge, categories / scenarios per category) — the judges that had no gold before
NEW = [("asb", "privacy_pairs", "GC,HS,CM", None), ("asb", "abstraction", "CD,MC", None),
       ("asb", "task", None, None), ("agentleak", "task", None, 2)]
ITEM = [("asb", "privacy"), ("agentleak", "leak"), ("sopri", "granularity")]


def _cli(*args: str, ok: bool = True):
    """The command's output; with ``ok`` False, the message of the UserError it stopped with."""
    res = CliRunner().invoke(app, list(args), catch_exceptions=not ok)
    if not ok:
        assert isinstance(res.exception, UserError), res.output
        return str(res.exception)
    assert res.exit_code == 0, res.output
    return res.output


@pytest.fixture(scope="module")
def built():
    """{(benchmark, judge): gold items} built from the shipped suite."""
    out = {}
    for bench, name, cats, limit in NEW:
        bm = get_benchmark(bench)
        scenarios = bm.load_scenarios("builtin", cats, limit)
        out[(bench, name)] = gold_judges_of(bm)[name].build(scenarios.values(), seed=0)
    return out


def test_every_benchmark_names_its_judges_with_gold():
    assert list(gold_judges_of(get_benchmark("asb"))) == ["privacy", "privacy_pairs", "abstraction", "task"]
    assert list(gold_judges_of(get_benchmark("agentleak"))) == ["leak", "task"]
    assert list(gold_judges_of(get_benchmark("sopri"))) == ["granularity"]
    for bench, name in ITEM:  # the item judge, under its run name, asked through its ItemJudge
        gj = gold_judges_of(get_benchmark(bench))[name]
        assert gj.item_judge and gj.metrics == get_benchmark(bench).item_judge.metrics


@pytest.mark.parametrize("bench,name", [(b, n) for b, n, _, _ in NEW])
def test_each_judges_gold_is_minimal_pairs_that_pass_the_checks(built, bench, name):
    items = built[(bench, name)]
    space = label_space(name)
    assert items and all(it.judge == name and it.label in space.labels for it in items)
    check = check_gold(items)
    assert check.ok, check.problems
    levels = Counter(it.level for it in items)
    assert levels["none"] and levels["none"] < len(items)  # both sides of the decision
    pairs: dict[str, list] = {}
    for it in items:
        pairs.setdefault(it.meta["pair"], []).append(it)
    for members in pairs.values():  # every pair: a positive and its twins, the same bag of words
        assert {it.meta["side"] for it in members} == {"leak", "twin"}
        words = {tuple(sorted(re.sub(r"['’]s$", "", w) for w in tokens(body(it)))) for it in members}
        if name in ("task", "privacy_pairs"):
            assert len(words) == 1, members[0].id


def test_pair_rubric_twins_differ_in_the_recipient_or_the_person_only(built):
    items = built[("asb", "privacy_pairs")]
    by_pair: dict[str, dict[str, object]] = {}
    for it in items:
        by_pair.setdefault(it.meta["pair"], {})[it.id.rsplit(":", 1)[1]] = it
    group = next(iter(by_pair.values()))
    leak, rec = group["leak"], group["recipient_twin"]
    assert [m.content for m in leak.messages] == [m.content for m in rec.messages]
    planted = leak.planted[0]
    assert leak.messages[planted].recipients == leak.meta["forbidden"] != rec.messages[planted].recipients
    assert leak.label in ("partial", "full") and rec.label == "none" and group["twin"].label == "none"


def _weaken(items):
    """A passable set: every negative's planted message replaced by an empty remark."""
    out = []
    for it in items:
        if it.level == "none":
            i = it.planted[0]
            msgs = [m.model_copy(update={"content": "Nothing to add."}) if k == i else m
                    for k, m in enumerate(it.messages)]
            it = it.model_copy(update={"messages": msgs})
        out.append(it)
    return out


@pytest.mark.parametrize("bench,name", [(b, n) for b, n, _, _ in NEW])
def test_a_planted_weak_set_of_each_judge_is_refused(built, bench, name):
    check = check_gold(_weaken(built[(bench, name)]))
    assert not check.ok
    assert any("cheater reaches" in p for p in check.problems), check.problems


def test_gold_build_writes_one_file_per_judge_and_refuses_unknown_ones(tmp_path):
    out = tmp_path / "g.jsonl"
    text = _cli("judges", "gold", "build", "--from", "builtin", "--categories", "CD,GC", "--out", str(out))
    assert "== privacy_pairs judge (MPLR, HALR, CSLR and ACS)" in text
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["g.abstraction.jsonl", "g.jsonl", "g.privacy_pairs.jsonl", "g.task.jsonl"]
    assert all(it.judge is None for it in read_gold(out))  # the item judge's file reads as before
    assert all("judge" not in json.loads(line) for line in out.read_text().splitlines())
    assert {it.judge for it in read_gold(tmp_path / "g.task.jsonl")} == {"task"}
    one = tmp_path / "only.jsonl"
    _cli("judges", "gold", "build", "--from", "builtin", "--limit", "2", "--judge", "task", "--out", str(one))
    assert {it.judge for it in read_gold(one)} == {"task"} and not (tmp_path / "only.task.jsonl").exists()
    err = _cli("judges", "gold", "build", "--from", "builtin", "--judge", "leak", "--out", str(one), ok=False)
    assert "'leak' is not a judge of asb" in err and "privacy_pairs" in err


def test_labels_are_checked_in_each_judges_own_space(tmp_path, built):
    it = built[("asb", "abstraction")][0]
    good = write_gold(tmp_path / "a.jsonl", [it])
    assert read_gold(good)[0].label == it.label
    bad = json.loads(good.read_text())
    bad["label"] = "full"  # a leak level is no abstraction score
    (tmp_path / "b.jsonl").write_text(json.dumps(bad) + "\n")
    with pytest.raises(GoldError, match=r"b.jsonl:1: field 'label': 'full' is not a label of the abstraction judge"):
        read_gold(tmp_path / "b.jsonl")


# -- judges eval: the run's call, scored with known answers -------------------------------------------

def _answer(request, item, positive: bool) -> dict:
    """A schema-valid answer to the judge's real call for ``item`` (its gold label, or "positive")."""
    props = request.output.schema["properties"]
    label = item.label
    if item.judge == "task" and "task_completed" in props:
        yes = positive or label == "yes"
        return {"justification": "read it", "task_completed": yes, "quality": "1" if yes else "0"}
    if item.judge == "task":  # AgentLeak: one verdict per criterion, a met one quoting the answer
        answer = item.messages[item.planted[0]].content
        met = positive or label == "yes"
        return {k: {"evidence": answer[:60] if met else "none", "verdict": "met" if met else "not met"} for k in props}
    if item.judge == "abstraction":
        planted = f"m_{item.planted[0]}"
        assert planted in props
        return {k: ("0" if positive else label) if k == planted else "n/a" for k in props}
    assert item.judge == "privacy_pairs" and list(props) == ["item_1"]
    person = [r for r in props["item_1"]["properties"] if r != "evidence"]
    return {"item_1": {"evidence": "none", **{r: "full" if positive else label for r in person}}}


def _scripted(items, positive: bool, name: str) -> StructuredClient:
    by_id = {it.id: it for it in items}

    def reply(request):
        return json.dumps(_answer(request, by_id[request.tag.split("|")[1]], positive)), "stop"

    backend = ScriptedBackend(reply)
    backend.identity = type(backend.identity)(preset=name, source="test", revision="1")
    return StructuredClient(backend, cache=None)


@pytest.mark.parametrize("bench,name", [(b, n) for b, n, _, _ in NEW])
def test_eval_asks_each_judge_with_the_runs_call_and_scores_known_answers(tmp_path, built, bench, name):
    items = built[(bench, name)][:24]
    gold = write_gold(tmp_path / "gold.jsonl", items)
    bm = get_benchmark(bench)
    gj = gold_judges_of(bm)[name]
    clients = {"right": _scripted(items, False, "right"), "always": _scripted(items, True, "always")}
    cfg = EvalConfig(judges=list(clients), benchmark=bench)
    asyncio.run(run_eval(gold, tmp_path / "ev", cfg, bm.item_judge, clients=clients, show_progress=False,
                         gold_judge=gj))
    saved = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert saved["bench_judge"] == name and saved["judge_metrics"] == gj.metrics and saved["rubric"] == gj.rubric
    assert saved["batch"] is False  # one item per call
    data = load_eval(tmp_path / "ev")
    for r in data.records:
        assert r["failure"] is None and r["judge"] == name and r["rubric"] == gj.rubric
        assert set(r["label"]["levels"]) == set(r["item_ids"]) and len(r["item_ids"]) == 1
    assert data.judge_labels("right") == {it.id: it.label for it in items}  # the judge's own labels, back
    right, always = judge_reliability(data, "right", 200), judge_reliability(data, "always", 200)
    assert right.gold.binary_kappa.estimate == pytest.approx(1.0)
    assert always.gold.binary_kappa.estimate == pytest.approx(0.0)
    lk = always.gold.leak  # every negative called positive: FPR 1, FNR 0
    assert lk.fp == lk.n_neg > 0 and lk.fn == 0
    assert gj.metrics in right.verdict.text
    decision = {"task": "rate of 'task completed' over-estimated", "abstraction": "rate of 'raw disclosure",
                "privacy_pairs": "leak rate over-estimated"}[name]
    assert decision in always.verdict.text  # the bias is named after the judge's own decision


def test_synthetic_judges_answer_in_each_judges_labels_and_a_report_has_a_section_per_judge(tmp_path, built):
    files = []
    for (bench, name), items in built.items():
        if bench == "asb":
            files += ["--gold", str(write_gold(tmp_path / f"g.{name}.jsonl", items[:24]))]
    out = tmp_path / "ev"
    text = _cli("judges", "eval", "--judges", "oracle,noisy:0.3,0.3", *files, "--out", str(out))
    md = (out / "report.md").read_text()
    for name in ("privacy_pairs", "abstraction", "task"):
        assert f"## {name}" in md and (out / name / "report.md").exists()
        assert json.loads((out / name / "eval.json").read_text())["bench_judge"] == name
        assert f"{name}: [use as is] oracle" in text
        data = load_eval(out / name)
        space = label_space(name)
        assert set(data.judge_labels("noisy:0.3,0.3").values()) <= set(space.labels)
        assert data.judge_labels("oracle") == {it.id: it.meta["judge_label"] for it in data.gold}
    assert "*task completed*" in md and "*raw disclosure" in md
    err = _cli("judges", "eval", "--judges", "oracle", "--gold", str(tmp_path / "g.task.jsonl"),
               "--gold", str(tmp_path / "g.abstraction.jsonl"), "--benchmark", "agentleak",
               "--out", str(tmp_path / "x"), ok=False)  # AgentLeak has a task judge, no abstraction judge
    assert "g.abstraction.jsonl: its items ask about the 'abstraction' judge" in err and "leak, task" in err
    built_asb = tmp_path / "b.task.jsonl"
    _cli("judges", "gold", "build", "--from", "builtin", "--limit", "1", "--judge", "task", "--out", str(built_asb))
    err = _cli("judges", "eval", "--judges", "oracle", "--gold", str(built_asb), "--benchmark", "agentleak",
               "--out", str(tmp_path / "y"), ok=False)  # the same judge name, another benchmark's gold
    assert "built for the asb benchmark, not agentleak" in err


@pytest.mark.parametrize("bench,name", [(b, n) for b, n, _, _ in NEW])
def test_tiny_model_answers_each_judges_real_call(tmp_path, tiny_dir, built, bench, name):
    items = built[(bench, name)][:2]
    gold = write_gold(tmp_path / "gold.jsonl", items)
    ev = tmp_path / "ev"
    _cli("judges", "eval", "--judges", "tiny-random", "--gold", str(gold), "--out", str(ev), "--engine", "hf",
         "--max-tokens", "120", "--benchmark", bench, "--no-report")
    records = load_eval(ev).records
    assert len(records) == len(items)
    space = label_space(name)
    for r in records:
        if r["failure"] is None:
            assert r["call"]["finish_reason"] == "stop"
            assert all(v in space.labels for v in r["label"]["levels"].values())
        else:
            assert r["label"] is None
    assert Path(ev / "eval.json").exists()
