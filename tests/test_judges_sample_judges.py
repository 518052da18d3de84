"""Real-transcript gold for the judges with labels of their own (issue 45 item 2): ASB's abstraction judge
(IAS: 0 / 0.5 / 1 / n/a per message) and task judge (TCQ, Task%: yes / no), AgentLeak's semantic task
judge (TSR:semantic: yes / no). Each is sampled from a run's judgments made with the benchmark's own call
builder and decoder, labelled through the real labeller in that judge's keys, imported with the labellers'
κ in the judge's own labels, and `judges eval` on the gold asks the very call the run made.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from localbench.cli import app
from localbench.judging.gold import opaque_number, read_gold

KEYPRESS = {"abstraction": {"0": "0", "0.5": "h", "1": "1", "n/a": "n"}, "task": {"yes": "y", "no": "n"},
            None: {"none": "n", "partial": "p", "full": "f"}}
SCORES = ("0", "0.5", "1", "n/a")


def _cli(*args, input: str | None = None) -> str:
    res = CliRunner().invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def _score(sim_key: str, key: str) -> str:
    """The scripted abstraction judge's score of one message (spread over the four labels)."""
    return SCORES[int(hashlib.sha256(f"{sim_key}|{key}".encode()).hexdigest(), 16) % 4]


def _scrubbed(messages: list[dict]) -> list[dict]:
    """A call's messages as the gold holds them: the model names in them scrubbed (the blind file's rule)."""
    return [{**m, "content": m["content"].replace("BRIGHT-MODEL", "[model]")} for m in messages]


def _label_all(blind: Path, name: str, answer) -> tuple[Path, str]:
    """Label the blind file through `judges label`, answering each item with ``answer(key id)`` in the keys
    of that item's judge; returns the label file and what the labeller was shown."""
    items = {it.id: it for it in read_gold(blind)}
    by_num = {opaque_number(i): i for i in items}
    _cli("judges", "label", blind, "--annotator", name, input="q\n")  # writes the labeller's order
    labels = blind.with_name(f"{blind.stem}.labels.{name}.jsonl")
    order = json.loads(labels.with_name(labels.name + ".order.json").read_text())["order"]
    presses = "".join(KEYPRESS[items[by_num[n]].judge][answer(by_num[n])] + "\n" for n in order)
    return labels, _cli("judges", "label", blind, "--annotator", name, input=presses)


@pytest.fixture(scope="module")
def asb_run(tmp_path_factory):
    """A planted ASB run (model names in its messages) with a scripted rejudge whose abstraction and task
    calls are the judge stage's own (``judge_calls``), answered in their schemas and decoded by ``decode``;
    one abstraction call failed. Returns (run dir, {(sim, target): call})."""
    from localbench.benchmarks.asb.judge_stage import delivered_messages
    from localbench.benchmarks.asb.judges import decode, judge_calls
    from localbench.judging.sample import fits_all
    from localbench.rejudge import LoadedRun
    from localbench.runlog import Judgment, RecordStore

    run = tmp_path_factory.mktemp("sj") / "runs" / "run-a9"
    _cli("judges", "plant-run", "--out", run, "--models", "bright-model:0.5")
    lines = []
    for line in (run / "transcripts.jsonl").read_text().splitlines():
        t = json.loads(line)
        for e in t["entries"]:
            if e["kind"] == "message":
                e["content"] += " (drafted by BRIGHT-MODEL)"
        lines.append(json.dumps(t))
    (run / "transcripts.jsonl").write_text("\n".join(lines) + "\n")
    loaded = LoadedRun.read(run)
    store = RecordStore(run / "judges" / "scripted" / "judgments.jsonl", Judgment)
    calls, failed = {}, False
    for n, t in enumerate(loaded.transcripts):
        for c in judge_calls(loaded.scenarios[t.scenario], delivered_messages(t), fits_all):
            if c.judge == "abstraction":
                label = decode(c, {k: _score(t.key, k) for k in c.keymap})
                if not failed:
                    label, failed = None, True
            elif c.judge == "task":
                label = decode(c, {"justification": "j", "task_completed": n % 2 == 0, "quality": "0.5"})
            else:
                continue
            calls[(t.key, c.target)] = c
            store.append(Judgment(key=f"{t.key}|{c.judge}|{c.target}", **c.record_fields(t), judge_model="scripted",
                                  label=label, failure=None if label else "scripted failure"))
    return run, calls


def test_asb_abstraction_and_task_sampled_labelled_imported_and_asked_as_the_run_asked(asb_run, tmp_path):
    from localbench.benchmarks.asb.gold_judges import gold_judges
    from localbench.judging.gold_eval import EvalConfig, eval_tasks
    from localbench.runlog import JsonlStore

    run, calls = asb_run
    out = _cli("judges", "sample", run, "--n", "24", "--seed", "2", "--labels-of", "scripted",
               "--judge", "abstraction", "--judge", "task", "--out", tmp_path / "s")
    assert "24 of " in out and "abstraction" in out and "task" in out
    blind = tmp_path / "s" / "sample.jsonl"
    text = blind.read_text()
    key = [json.loads(x) for x in (tmp_path / "s" / "private" / "key.jsonl").read_text().splitlines()]
    for forbidden in ("bright-model", "BRIGHT-MODEL", "scripted", "run-a9", '"label"', "judge_label", "sim_key",
                      *{k["sim_key"] for k in key}, *{k["scenario"] for k in key}):
        assert forbidden not in text, forbidden
    assert "[model]" in text
    by_id = {k["id"]: k for k in key}
    blind_items = {it.id: it for it in read_gold(blind)}
    assert {it.judge for it in blind_items.values()} == {"abstraction", "task"}
    for i, it in blind_items.items():  # what each judge's call shows besides the messages, and no label
        k = by_id[i]
        assert it.label is None and it.planted
        if it.judge == "abstraction":
            assert it.meta["keys"][it.planted[0]] == k["unit"] and len(it.meta["items"]) >= 1
            want = None if k["target"] == "msgs0" and k["judge_label"] is None else _score(k["sim_key"], k["unit"])
            assert k["judge_label"] == want
        else:
            assert it.meta["task"] and it.planted == [len(it.messages) - 1] and k["judge_label"] in ("yes", "no")
    info = json.loads((tmp_path / "s" / "private" / "sample.json").read_text())
    labels = {(s["judge"], s["judge_label"]) for s in info["strata"]}
    assert ("task", "yes") in labels and ("task", "no") in labels and ("abstraction", "failed") in labels
    assert {lab for j, lab in labels if j == "abstraction"} - {"failed"} <= set(SCORES)

    # two labellers in each judge's keys: ana gives the judge's labels (a failed call: 0); ben tells one
    # abstraction item's 1 and n/a apart the other way (the same leak level, another score)
    truth = {i: k["judge_label"] or "0" for i, k in by_id.items()}
    odd = sorted(i for i, k in by_id.items() if k["judge"] == "abstraction" and truth[i] in ("1", "n/a"))[0]
    swap = {"1": "n/a", "n/a": "1"}
    ana, shown = _label_all(blind, "ana", truth.get)
    ben, _ = _label_all(blind, "ben", lambda i: swap[truth[i]] if i == odd else truth[i])
    assert "How well does message [" in shown and "[h] 0.5" in shown and "Did the people and assistants" in shown
    assert "[y]es" in shown and "[f]ull" not in shown
    out = _cli("judges", "gold", "import", ana, ben, "--key", tmp_path / "s" / "private" / "key.jsonl",
               "--out", tmp_path / "g.jsonl")
    assert "abstraction (0, 0.5, 1, n/a):" in out and "task (no, yes):" in out and "1 items labelled differently" in out
    ag = json.loads((tmp_path / "g.jsonl.agreement.json").read_text())["agreement_by_judge"]
    ab = ag["abstraction"]["pairs"][0]
    assert ab["kappa"] < 1 and ab["low"] <= ab["kappa"] <= ab["high"] and ab["n"] == sum(
        k["judge"] == "abstraction" for k in key)
    assert ab["binary_kappa"] == 1.0  # 1 and n/a are the same leak decision: only κ in the judge's labels sees it
    assert ag["task"]["pairs"][0]["kappa"] == 1.0 and ag["task"]["labels"] == ["no", "yes"]

    for judge in ("abstraction", "task"):
        gold = read_gold(tmp_path / f"g.{judge}.jsonl")
        assert {it.judge for it in gold} == {judge} and {it.source.kind for it in gold} == {"transcript"}
        assert all(it.label == truth[it.id] for it in gold if it.id != odd)
        # `judges eval` asks each item with the run's call: the same prompt and schema, read at its message
        gj = gold_judges()[judge]
        tasks = eval_tasks("scripted", gold, EvalConfig(judges=["scripted"], batch=False), JsonlStore(tmp_path / f"{judge}.jsonl"),
                           None, gj)
        assert len(tasks) == len(gold)
        for it, task in zip(gold, tasks):
            t = it.meta["transcript"]
            run_call = calls[(t["sim_key"], t["target"])]
            assert task.request.messages == _scrubbed(run_call.messages) and task.request.output.schema == run_call.schema
            if judge == "abstraction":
                answer = {k: _score(t["sim_key"], k) for k in run_call.keymap}
                assert task.decode(answer)["levels"][it.id] == _score(t["sim_key"], t["unit"])
    _cli("judges", "eval", "--judges", "oracle", "--gold", tmp_path / "g.abstraction.jsonl", "--out", tmp_path / "ev")
    assert "This is **real-transcript gold**" in (tmp_path / "ev" / "report.md").read_text()
    ev = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert ev["gold_origin"] == "real-transcript gold" and ev["bench_judge"] == "abstraction"


def test_a_label_outside_the_judges_labels_is_refused(asb_run, tmp_path):
    run, _ = asb_run
    _cli("judges", "sample", run, "--n", "3", "--labels-of", "scripted", "--judge", "task", "--out", tmp_path / "s")
    labels, _ = _label_all(tmp_path / "s" / "sample.jsonl", "ana", lambda i: "yes")
    recs = [json.loads(x) for x in labels.read_text().splitlines()]
    recs[0]["label"] = "full"  # a leak level on a task item
    labels.write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = CliRunner().invoke(app, ["judges", "gold", "import", str(labels), "--key",
                                   str(tmp_path / "s" / "private" / "key.jsonl"), "--out", str(tmp_path / "g.jsonl")])
    assert res.exit_code != 0 and str(labels) in str(res.exception) and "'full'" in str(res.exception)


def test_agentleak_task_judge_from_oracle_traces(tmp_path):
    """Two traces played by the reference agent, their semantic task calls answered (every criterion met on
    one, one unmet on the other) and decoded by the run's decoder: one input per trace, labelled y / n by two
    labellers, imported as task gold, and `judges eval` asks the run's call (tools included)."""
    from localbench.benchmarks.agentleak.gold_judges import gold_judges
    from localbench.benchmarks.agentleak.oracle import OracleBackend
    from localbench.benchmarks.agentleak.simulate import AgentLeakSimulator
    from localbench.benchmarks.agentleak.task_judge import decode_task, task_call
    from localbench.judging.gold_eval import EvalConfig, eval_tasks
    from localbench.judging.sample import SampleInfo, draw, with_simulation, write_sample
    from localbench.registry import get_benchmark
    from localbench.runlog import JsonlStore, Judgment
    from localbench.runtime.clients import RoleClients
    from localbench.serving.client import StructuredClient
    from localbench.spec import load_spec

    spec = load_spec(None, benchmark="agentleak", scenarios="builtin", conditions=["single"], limit=4)
    sim = AgentLeakSimulator()
    scenarios, _ = sim.load(spec)
    clients = RoleClients({"agent": StructuredClient(OracleBackend("oracle"), cache=None, max_retries=0)})
    bm = get_benchmark("agentleak")
    inputs, calls = [], {}
    for unit in sim.plan(spec, scenarios):
        s = unit.task
        if len(calls) == 2 or not s.success.criteria:
            continue
        t = asyncio.run(sim.play(unit, clients, spec))
        call = task_call(s, t)
        if call is None or not call.n_messages:
            continue
        met = len(calls) == 0
        parsed = {k: {"evidence": call.shown[:40], "verdict": "met" if met or n else "not met"}
                  for n, k in enumerate(call.keymap)}
        j = Judgment(key=f"{t.key}|task|task", **call.record_fields(t), judge_model="scripted",
                     label=decode_task(call, parsed))
        frame = bm.judge_inputs(t, s, [j], spec)
        assert [x.judge for x in frame.inputs] == ["task"] and not frame.left_out
        assert frame.inputs[0].judge_label == ("yes" if met else "no")
        calls[t.key] = call
        inputs += [with_simulation(x, t, "scripted") for x in frame.inputs]
    assert len(inputs) == 2
    chosen, strata = draw(inputs, 2, seed=0)
    info = SampleInfo(run="r", run_id="r", benchmark="agentleak", spec_hash="h", judge_model="scripted",
                      judges=["task"], n=2, seed=0, strata=[], available=2, left_out={}, scrubbed_names=[])
    blind, key_path = write_sample(tmp_path, chosen, strata, info)
    key = {json.loads(x)["id"]: json.loads(x) for x in key_path.read_text().splitlines()}
    assert all('"label"' not in x and "judge_label" not in x for x in blind.read_text().splitlines())
    assert not any(k["scenario"] in blind.read_text() or k["sim_key"] in blind.read_text() for k in key.values())
    ana, shown = _label_all(blind, "ana", lambda i: key[i]["judge_label"])
    ben, _ = _label_all(blind, "ben", lambda i: key[i]["judge_label"])
    assert "Success criteria:" in shown and "Does the final answer meet every success criterion" in shown
    out = _cli("judges", "gold", "import", ana, ben, "--key", key_path, "--out", tmp_path / "g.jsonl")
    assert "Cohen's κ(ana, ben) = 1.00" in out and "task completed" in out
    gold = read_gold(tmp_path / "g.jsonl")
    assert {it.judge for it in gold} == {"task"} and sorted(it.label for it in gold) == ["no", "yes"]
    tasks = eval_tasks("scripted", gold, EvalConfig(judges=["scripted"], batch=False), JsonlStore(tmp_path / "j.jsonl"),
                       None, gold_judges()["task"])
    for it, task in zip(gold, tasks):
        assert task.request.messages == calls[it.meta["transcript"]["sim_key"]].messages
    _cli("judges", "eval", "--benchmark", "agentleak", "--judges", "oracle", "--gold", tmp_path / "g.jsonl",
         "--out", tmp_path / "ev", "--no-report")
    ev = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert ev["gold_origin"] == "real-transcript gold" and ev["bench_judge"] == "task"


def test_label_files_are_read_in_each_items_judges_labels(tmp_path):
    """`gold merge` of a task gold set labelled in y / n: its labels are taken, a leak level on a task item is
    an error naming the file and the label."""
    from localbench.judging.gold import (GoldError, GoldItem, GoldMessage, GoldPrivateItem, LabelRecord, Provenance,
                                         annotator_labels, write_gold)
    from localbench.judging.labeller import label_session

    items = [GoldItem(id=f"task:{i}", judge="task", messages=[GoldMessage(sender="a", content=f"done {i}")],
                      item=GoldPrivateItem(owner="o", text="the plan is sent"), source=Provenance(kind="construction"),
                      planted=[0], meta={"task": "send the plan"}) for i in range(2)]
    gold = write_gold(tmp_path / "g.jsonl", items)
    label_session(gold, "ana", stdin=io.StringIO("f\ny\nn\n"), stdout=io.StringIO())  # f: not a task key
    got = annotator_labels(items, [tmp_path / "g.labels.ana.jsonl"])
    assert sorted(got["ana"].values()) == ["no", "yes"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(LabelRecord(key="x", annotator="ben", label="full",
                                          shown_as=opaque_number("task:0")).dump()) + "\n")
    with pytest.raises(GoldError, match="bad.jsonl.*'full'"):
        annotator_labels(items, [bad])
