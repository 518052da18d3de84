"""Gold from a run's real transcripts (issue 45 item 2): `judges sample` draws a stratified, blind sample of
the judge inputs a run made, people label it with `judges label`, `judges gold import --key` turns their
answers into gold with their agreement, and `judges eval` on it says it is real-transcript gold.

The run is a planted AgentSocialBench run judged by a synthetic judge with known error rates (no model);
the whole flow goes through the real CLI, the labellers answering through the real labelling tool.
AgentLeak's and SopriBench's hooks are checked on transcripts played by their reference agents.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from localbench.cli import app
from localbench.judging.gold import opaque_number, read_gold
from localbench.judging.sample import (JudgeInput, SCRUBBED, allocate, blind_line, draw, model_names, scrubber,
                                       with_simulation)
from localbench.judging.gold import GoldMessage, GoldPrivateItem

NOISY = "noisy:0.1,0.2"
MODELS = ("planted-low", "planted-high")
KEYPRESS = {"none": "n", "partial": "p", "full": "f"}


def _cli(*args: str, input: str | None = None):
    res = CliRunner().invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory) -> Path:
    """A planted ASB run (run id run-x7) judged by a noisy synthetic judge; every message names its model."""
    run = tmp_path_factory.mktemp("sample") / "runs" / "run-x7"
    _cli("judges", "plant-run", "--out", run, "--models", ",".join(f"{m}:0.5" for m in MODELS))
    _cli("judges", "rejudge", run, "--judge", NOISY)
    lines = []
    for line in (run / "transcripts.jsonl").read_text().splitlines():
        t = json.loads(line)
        for e in t["entries"]:
            if e["kind"] == "message":
                e["content"] += f" (drafted by {t['model'].upper()})"  # a model name in the text, any case
        lines.append(json.dumps(t))
    (run / "transcripts.jsonl").write_text("\n".join(lines) + "\n")
    return run


def _label(blind: Path, name: str, answer) -> Path:
    """Label the blind file through `judges label`, answering each item (in the labeller's own order)
    with ``answer(key id)``; returns the label file."""
    _cli("judges", "label", blind, "--annotator", name, input="q\n")  # writes the labeller's order, shows one item
    labels = blind.with_name(f"{blind.stem}.labels.{name}.jsonl")
    order = json.loads(labels.with_name(labels.name + ".order.json").read_text())["order"]
    key = {opaque_number(k["id"]): k["id"] for k in _key(blind.parent)}
    _cli("judges", "label", blind, "--annotator", name, input="".join(KEYPRESS[answer(key[num])] + "\n" for num in order))
    return labels


def _key(sample_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (sample_dir / "private" / "key.jsonl").read_text().splitlines()]


def test_sample_label_import_and_eval_through_the_cli(planted_run, tmp_path):
    out = _cli("judges", "sample", planted_run, "--n", "12", "--seed", "3", "--labels-of", NOISY,
               "--out", tmp_path / "s")
    assert "12 of " in out and "labels of noisy:0.1,0.2" in out
    blind = tmp_path / "s" / "sample.jsonl"

    # the blind file, as written: no label, no model or judge name, no run id, no simulation key, no scenario
    text = blind.read_text()
    key = _key(tmp_path / "s")
    assert len(text.splitlines()) == 12 == len(key)
    for forbidden in (*MODELS, "PLANTED-LOW", "noisy", "run-x7", '"label"', "judge_label", "sim_key", "scenario",
                      *{k["sim_key"] for k in key}, *{k["scenario"] for k in key}):
        assert forbidden not in text, forbidden
    assert SCRUBBED in text  # the model names in the messages were there, and are gone
    for line in text.splitlines():
        d = json.loads(line)
        assert set(d) == {"id", "messages", "item", "source"} and d["source"] == {"kind": "transcript"}
    assert [json.loads(x)["id"] for x in text.splitlines()] != sorted(k["id"] for k in key)  # shuffled, not sorted
    assert {k["judge"] for k in key} == {"privacy"} and {k["judge_model"] for k in key} == {NOISY}
    assert {k["run_id"] for k in key} == {"run-x7"} and all(k["judge_label"] in ("none", "partial", "full") for k in key)

    # stratified: (judge, category, condition, the judge's label), every stratum drawn, proportional
    info = json.loads((tmp_path / "s" / "private" / "sample.json").read_text())
    strata = info["strata"]
    assert sum(s["drawn"] for s in strata) == 12 and len(strata) <= 12
    assert all(1 <= s["drawn"] <= s["available"] for s in strata)
    total = sum(s["available"] for s in strata)
    assert all(abs(s["drawn"] - 12 * s["available"] / total) < 1.5 for s in strata), strata
    drawn = {}
    for k in key:
        s = (k["judge"], k["category"], k["condition"], k["judge_label"])
        drawn[s] = drawn.get(s, 0) + 1
    assert drawn == {(s["judge"], s["category"], s["condition"], s["judge_label"]): s["drawn"] for s in strata}
    assert {s["category"] for s in strata} == {"CD", "MC", "CU"}
    # the same seed draws the same sample in the same order
    _cli("judges", "sample", planted_run, "--n", "12", "--seed", "3", "--labels-of", NOISY, "--out", tmp_path / "s2")
    assert (tmp_path / "s2" / "sample.jsonl").read_text() == text

    # two labellers through the labelling tool: ana gives the judge's labels, ben differs on one item
    by_id = {k["id"]: k for k in key}
    odd = sorted(by_id)[0]
    other = {"none": "full", "partial": "none", "full": "none"}
    ana = _label(blind, "ana", lambda i: by_id[i]["judge_label"])
    ben = _label(blind, "ben", lambda i: other[by_id[i]["judge_label"]] if i == odd else by_id[i]["judge_label"])
    gold = tmp_path / "gold.jsonl"
    out = _cli("judges", "gold", "import", ana, ben, "--key", tmp_path / "s" / "private" / "key.jsonl", "--out", gold)
    assert "Cohen's κ(ana, ben) = " in out and "1 items labelled differently" in out
    line = next(x for x in out.splitlines() if "Cohen's κ" in x)
    import re

    kappa, low, high = (float(v) for v in re.match(r".*?= (\S+) \[(\S+), (\S+)\]", line).groups())
    assert 0 < kappa < 1 and low <= kappa <= high <= 1
    items = read_gold(gold)
    assert len(items) == 12 and {it.source.kind for it in items} == {"transcript"}
    unlabelled = [it for it in items if it.label is None]
    assert [it.id for it in unlabelled] == [odd]  # two labellers, no majority: left unlabelled, listed
    assert all(it.label == by_id[it.id]["judge_label"] for it in items if it.id != odd)
    assert all(it.meta["transcript"]["run_id"] == "run-x7" and it.meta["transcript"]["spec_hash"] for it in items)
    assert all(it.source.seed == 3 and it.annotations.keys() == {"ana", "ben"} for it in items)
    diff = [json.loads(x) for x in gold.with_name(gold.name + ".disagreements.jsonl").read_text().splitlines()]
    assert [d["id"] for d in diff] == [odd]
    agreement = json.loads(gold.with_name(gold.name + ".agreement.json").read_text())
    assert agreement["agreement"]["pairs"][0]["n"] == 12 and agreement["disagreements"] == 1

    # an adjudicator settles the item without a majority; one labeller alone gives the gold
    out = _cli("judges", "gold", "import", ana, ben, "--key", tmp_path / "s" / "private" / "key.jsonl", "--out",
               tmp_path / "adj.jsonl", "--adjudicator", "ben")
    adj = {it.id: it for it in read_gold(tmp_path / "adj.jsonl")}
    assert adj[odd].label == other[by_id[odd]["judge_label"]] and "adjudicated by ben" in adj[odd].source.annotator
    out = _cli("judges", "gold", "import", ana, "--key", tmp_path / "s" / "private" / "key.jsonl", "--out",
               tmp_path / "one.jsonl")
    assert "one labeller" in out and all(it.label is not None for it in read_gold(tmp_path / "one.jsonl"))

    # the eval on it says it is real-transcript gold (report and eval.json)
    _cli("judges", "eval", "--judges", "oracle", "--gold", tmp_path / "adj.jsonl", "--out", tmp_path / "ev")
    assert "This is **real-transcript gold**" in (tmp_path / "ev" / "report.md").read_text()
    ev = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert ev["gold_origin"] == "real-transcript gold" and ev["bench_judge"] == "privacy"  # ASB's item judge
    from localbench.judging.trust import gold_kind

    assert gold_kind(ev) == "real-transcript"  # as a run report's trust section reads it


def test_a_label_file_of_another_sample_is_refused(planted_run, tmp_path):
    _cli("judges", "sample", planted_run, "--n", "4", "--seed", "1", "--labels-of", NOISY, "--out", tmp_path / "a")
    _cli("judges", "sample", planted_run, "--n", "4", "--seed", "2", "--labels-of", NOISY, "--out", tmp_path / "b")
    labels = _label(tmp_path / "a" / "sample.jsonl", "ana", lambda i: "none")
    res = CliRunner().invoke(app, ["judges", "gold", "import", str(labels), "--key",
                                   str(tmp_path / "b" / "private" / "key.jsonl"), "--out", str(tmp_path / "g.jsonl")])
    assert res.exit_code != 0 and str(labels) in str(res.exception) and "not the number of any item" in str(res.exception)
    res = CliRunner().invoke(app, ["judges", "sample", str(planted_run), "--n", "10000", "--labels-of", NOISY])
    assert res.exit_code != 0 and "--n 10000" in str(res.exception)


def test_allocation_is_proportional_with_one_per_stratum():
    sizes = {("a",): 10, ("b",): 6, ("c",): 3, ("d",): 1}
    assert allocate(sizes, 10) == {("a",): 5, ("b",): 3, ("c",): 1, ("d",): 1}  # d gets its one
    assert allocate(sizes, 3) == {("a",): 2, ("b",): 1, ("c",): 0, ("d",): 0}  # fewer than strata: by quota
    assert allocate(sizes, 20) == sizes


def _input(unit: str, label: str, category: str = "CD") -> JudgeInput:
    return JudgeInput(judge="privacy", target="all", unit=unit, judge_label=label, sim_key=f"m|{unit}",
                      category=category, condition="L0",
                      messages=[GoldMessage(sender="a", content="x")], item=GoldPrivateItem(owner="o", text="t"))


def test_draw_is_seeded_and_follows_the_allocation():
    xs = [_input(f"u{i}", "none" if i % 4 else "full", "CD" if i < 30 else "MC") for i in range(40)]
    a, strata = draw(xs, 8, seed=1)
    assert draw(xs, 8, seed=1)[0] == a and {x.unit for x in draw(xs, 8, seed=2)[0]} != {x.unit for x in a}
    assert {k: d for k, (d, _) in strata.items()} == allocate({k: n for k, (_, n) in strata.items()}, 8)
    assert sum(x.stratum == ("privacy", "MC", "L0", "full") for x in a) == strata[("privacy", "MC", "L0", "full")][0]


def test_model_names_come_from_the_spec_and_are_scrubbed_in_any_case():
    doc = {"resolved_models": {"agent": "qwen3-8b", "judge": "Qwen/Qwen3-32B"},
           "judge": {"identity": {"preset": "qwen3-32b", "source": "Qwen/Qwen3-32B"}}}
    names = model_names(doc, [], ["noisy:0.1,0.2", "ab"])
    assert {"qwen3-8b", "Qwen/Qwen3-32B", "Qwen3-32B", "noisy:0.1,0.2"} <= set(names) and "ab" not in names
    scrub = scrubber(names)
    assert scrub("as QWEN3-8B said, and Qwen/Qwen3-32B") == f"as {SCRUBBED} said, and {SCRUBBED}"
    x = with_simulation(_input("u1", "none"), type("T", (), {"key": "k", "scenario": "s", "category": "CD",
                                                            "condition": "L0", "model": "m"})(), "j")
    assert x.sim_key == "k" and x.judge_model == "j"


def test_agentleak_leak_judge_inputs_rebuilt_from_an_oracle_trace():
    """The tier-3 calls of a trace played by the leaking oracle, labelled by a stand-in judge: each field of
    each call becomes one input showing that channel's events, and the blind line carries no label."""
    from localbench.benchmarks.agentleak.judge_stage import channel_contents, chunks, judged_fields
    from localbench.benchmarks.agentleak.judges import judge_calls
    from localbench.benchmarks.agentleak.oracle import OracleBackend
    from localbench.benchmarks.agentleak.scenario import CHANNELS
    from localbench.benchmarks.agentleak.simulate import AgentLeakSimulator
    from localbench.judging.sample import RULE, SPLIT, blind_item, fits_all
    from localbench.registry import get_benchmark
    from localbench.runlog import Judgment
    from localbench.runtime.clients import RoleClients
    from localbench.serving.client import StructuredClient
    from localbench.spec import load_spec

    spec = load_spec(None, benchmark="agentleak", scenarios="builtin", conditions=["multi"], limit=1)
    sim = AgentLeakSimulator()
    scenarios, _ = sim.load(spec)
    clients = RoleClients({"agent": StructuredClient(OracleBackend("oracle-leaks-C2"), cache=None, max_retries=0)})
    unit = next(iter(sim.plan(spec, scenarios)))
    t = asyncio.run(sim.play(unit, clients, spec))
    s = unit.task
    events = channel_contents(t)
    judgments, asked, failed = [], 0, set()
    for ch in CHANNELS:  # as the judge stage plans them: fields in groups by the answer budget
        groups = chunks(judged_fields(s, ch, events[ch]), spec.judge_max_tokens)
        for k, group in enumerate(groups):
            target = ch if len(groups) == 1 else f"{ch}.{k}"
            for c in judge_calls(s, ch, events[ch], fits_all, fields=group, target=target):
                model = "scripted" if c.n_messages else "rule"
                asked += len(c.keymap) if c.n_messages else 0
                label = {"levels": {f: "partial" for f in c.keymap.values()}}
                if k == 1 and c.n_messages and not failed:  # one grouped call failed: its fields still sampled
                    label, failed = None, set(c.keymap.values())
                judgments.append(Judgment(key=f"{t.key}|leak|{c.target}", sim_key=t.key, judge="leak",
                                          target=c.target, judge_model=model, label=label))
    judgments.append(judgments[0].model_copy(update={"target": "C1#0", "key": f"{t.key}|leak|C1#0"}))
    bm = get_benchmark("agentleak")
    frame = bm.judge_inputs(t, s, judgments, spec)
    rules = sum(j.judge_model == "rule" for j in judgments)
    assert asked > 0 and failed and len(frame.inputs) == asked and frame.left_out == {SPLIT: 1, RULE: rules}
    assert {x.unit for x in frame.inputs if x.judge_label is None} == failed
    assert len(bm.judge_inputs(t, s, judgments).inputs) == asked - len(failed)  # no spec: its group is unknown
    x = next(x for x in frame.inputs if x.judge_label)
    ch = x.meta["channel"]
    assert [m.content for m in x.messages] == [text for _, text in events[ch]] and x.judge_label == "partial"
    assert x.item.text.split("'s ")[0] == x.item.owner and x.item.id == x.unit
    line = blind_line(blind_item(x, "t1", scrubber([])))
    assert "partial" not in line and t.key not in line


def test_sopri_granularity_inputs_read_the_grade_as_pes_counts_it():
    from localbench.benchmarks.sopri.judges import grade_levels, parse_gold_id
    from localbench.registry import get_benchmark
    from localbench.runlog import Judgment, Transcript

    bm = get_benchmark("sopri")
    user = next(iter(bm.load_scenarios("builtin:sopri-mini", None, 1).values()))
    answers = {a.slot: {"value": a.value, "posts": [], "evidence": ""} for a in user.leaked}
    t = Transcript(key=f"m|{user.id}|oracle|0", scenario=user.id, category=user.cohort, condition="oracle", model="m",
                   termination="done", payload={"profile": answers})
    grades = {a.slot: grade_levels(a.slot)[0] for a in user.leaked}  # every answer graded wrong ...
    deep = next(a for a in user.leaked if len(grade_levels(a.slot)) > 2)
    grades[deep.slot] = grade_levels(deep.slot)[1]  # ... but one hierarchical slot right at its first level
    j = Judgment(key=f"{t.key}|granularity|all", sim_key=t.key, judge="granularity", target="all",
                 judge_model="scripted", label={"levels": grades})
    frame = bm.judge_inputs(t, user, [j])
    assert len(frame.inputs) == len(user.leaked) and not frame.left_out
    by = {x.unit: x for x in frame.inputs}
    assert all(by[s].judge_label == "none" for s in grades if s != deep.slot)
    assert by[deep.slot].judge_label == ("partial" if by[deep.slot].meta["depth"] > 1 else "full")
    assert parse_gold_id(by[deep.slot].gold_id) == (deep.slot, by[deep.slot].meta["depth"])
    assert by[deep.slot].messages[0].content.endswith(deep.value)
    rule = j.model_copy(update={"judge_model": "rule"})  # the exact judge's labels are a rule's: nothing to sample
    assert bm.judge_inputs(t, user, [rule]).inputs == []


def test_a_filled_copy_of_the_blind_file_counts_as_a_labeller(planted_run, tmp_path):
    """Labels made outside `judges label`: a copy of the blind file with each item's label filled in."""
    _cli("judges", "sample", planted_run, "--n", "6", "--seed", "4", "--labels-of", NOISY, "--out", tmp_path / "s")
    key = {k["id"]: k for k in _key(tmp_path / "s")}
    ana = _label(tmp_path / "s" / "sample.jsonl", "ana", lambda i: key[i]["judge_label"])
    filled = tmp_path / "cato.jsonl"
    lines = []
    for line in (tmp_path / "s" / "sample.jsonl").read_text().splitlines():
        d = json.loads(line)
        lines.append(json.dumps({**d, "label": key[d["id"]]["judge_label"]}))
    filled.write_text("\n".join(lines) + "\n")
    out = _cli("judges", "gold", "import", ana, filled, "--key", tmp_path / "s" / "private" / "key.jsonl",
               "--out", tmp_path / "g.jsonl")
    assert "Cohen's κ(ana, cato)" in out and "0 items labelled differently" in out
    assert all(it.annotations.keys() == {"ana", "cato"} and it.label == key[it.id]["judge_label"]
               for it in read_gold(tmp_path / "g.jsonl"))


def test_asb_pair_rubric_inputs_go_to_pair_gold_asked_about_their_recipient(tmp_path):
    """A multi-party transcript (every agent tells the others one private item) judged by the pair rubric:
    one input per (item, forbidden recipient); the labeller is asked about that recipient; the gold is the
    privacy_pairs judge's, and `judges eval` measures that judge on it."""
    import io

    from localbench.benchmarks.asb.judges import privacy_pair_calls
    from localbench.benchmarks.asb.loaders import load_scenarios
    from localbench.judging.labeller import label_session
    from localbench.judging.sample import SampleInfo, fits_all, write_sample
    from localbench.registry import get_benchmark
    from localbench.runlog import Judgment, LogEntry, Transcript

    s = load_scenarios("builtin", ["GC"], 1).scenarios[0]
    agents = [a.id for a in s.agents]
    entries = [LogEntry(index=i, round=0, kind="message", sender=a, recipients=[b for b in agents if b != a],
                        content=f"note {i}: " + s.items[i % len(s.items)].text) for i, a in enumerate(agents)]
    t = Transcript(key=f"m|{s.id}|L0|0", scenario=s.id, category="GC", condition="L0", model="m",
                   termination="done", entries=entries)
    calls = privacy_pair_calls(s, [e.model_dump() for e in entries], fits_all)
    judgments = [Judgment(key=f"{t.key}|privacy_pairs|{c.target}", sim_key=t.key, judge="privacy_pairs",
                          target=c.target, judge_model="x",
                          label={"levels": {i: {p: "full" for p in c.keymap["recipients"][k].values()}
                                            for k, i in c.keymap["items"].items()}}) for c in calls]
    frame = get_benchmark("asb").judge_inputs(t, s, judgments)
    pairs = sum(len(r) for c in calls for r in c.keymap["recipients"].values())
    assert pairs > 0 and len(frame.inputs) == pairs and not frame.left_out
    assert all(x.gold_judge == "privacy_pairs" and len(x.meta["forbidden"]) == 1 for x in frame.inputs)

    inputs = [with_simulation(x, t, "x") for x in frame.inputs]
    chosen, strata = draw(inputs, 3, seed=0)
    dyadic = with_simulation(_input("u1", "none"), t, "x")  # and one item-judge input in the same sample
    info = SampleInfo(run="r", run_id="r", benchmark="asb", spec_hash="h", judge_model="x", judges=["privacy_pairs"],
                      n=4, seed=0, strata=[], available=len(inputs), left_out={}, scrubbed_names=[])
    blind, key_path = write_sample(tmp_path, chosen + [dyadic], strata, info)
    lines = [json.loads(x) for x in blind.read_text().splitlines()]
    assert sum(x.get("judge") == "privacy_pairs" and set(x["meta"]) == {"forbidden"} for x in lines) == 3
    shown = io.StringIO()
    label_session(blind, "ana", stdin=io.StringIO("f\nf\nn\nn\n"), stdout=shown)
    asked = [x for x in shown.getvalue().splitlines() if x.startswith("How much")]
    names = {x.meta["forbidden"][0] for x in chosen}
    assert sum(any(f" to {n}?" in a for n in names) for a in asked) == 3 and "reveal?" in " ".join(asked)

    out = _cli("judges", "gold", "import", blind.with_name("sample.labels.ana.jsonl"), "--key", key_path,
               "--out", tmp_path / "g.jsonl")  # two judges: one gold file each
    assert "g.privacy_pairs.jsonl (privacy_pairs)" in out and "g.privacy.jsonl (privacy)" in out
    gold = read_gold(tmp_path / "g.privacy_pairs.jsonl")
    assert {it.judge for it in gold} == {"privacy_pairs"} and len(gold) == 3
    assert all(it.meta["forbidden"][0] in names for it in gold)
    assert [it.judge for it in read_gold(tmp_path / "g.privacy.jsonl")] == [None]
    _cli("judges", "eval", "--benchmark", "asb", "--judges", "oracle", "--gold", tmp_path / "g.privacy_pairs.jsonl",
         "--out", tmp_path / "ev", "--no-report")
    ev = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert ev["gold_origin"] == "real-transcript gold" and ev["bench_judge"] == "privacy_pairs"


def test_every_call_the_judge_stage_made_is_rebuilt(planted_run, tmp_path):
    """The run's own judge stage (a rejudge through a scripted judge client: real call builder, records,
    per-user targets for CU) against the sampler's rebuild: every item of every call is an input, none left
    out, each with the level that judgment gave it."""
    from judges_helpers import scripted_judge
    from localbench.rejudge import rejudge_one
    from localbench.runlog import Judgment, RecordStore

    def level(request, key, text):  # a deterministic judge that reads the transcript
        return "full" if text.split()[0] in request.messages[-1]["content"].split("Messages")[-1] else "none"

    out = asyncio.run(rejudge_one(planted_run, "scripted", client=scripted_judge(level, "scripted"),
                                  show_progress=False))
    made = [j for j in RecordStore(out / "judgments.jsonl", Judgment).read()
            if j.judge == "privacy" and j.judge_model != "rule"]
    units = {(j.sim_key, j.target, i): lv for j in made for i, lv in j.label["levels"].items()}
    assert {j.target for j in made} - {"all"} and len(units) > 12  # CU is judged per user
    _cli("judges", "sample", planted_run, "--n", len(units), "--labels-of", "scripted", "--out", tmp_path / "s")
    info = json.loads((tmp_path / "s" / "private" / "sample.json").read_text())
    assert info["available"] == len(units) and info["left_out"] == {}
    key = _key(tmp_path / "s")
    assert {(k["sim_key"], k["target"], k["unit"]): k["judge_label"] for k in key} == units
    assert {k["judge_model"] for k in key} == {"scripted"}
