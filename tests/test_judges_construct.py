"""Gold by construction: each planted item appears (or not) exactly as its label says."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

import pytest

from judges_helpers import minimal
from fakes import ScriptedBackend
from localbench.benchmarks.asb.loaders import load_scenarios
from localbench.benchmarks.asb.planting import build_gold, plant_run
from localbench.judging.construct import (
    HARD,
    METHODS,
    content_words,
    fragment_of,
    rewrite,
    split_of,
    templates,
)
from localbench.judging.gold import read_gold, write_gold
from localbench.serving.client import StructuredClient


@pytest.fixture(scope="module")
def scenarios():
    return load_scenarios("builtin").scenarios


@pytest.fixture(scope="module")
def gold(scenarios):
    return build_gold(scenarios, seed=0)


def _all_text(item) -> str:
    return "\n".join(m.content for m in item.messages)


def _norm(s: str) -> str:
    return re.sub(r"\s+", " ", s.strip())


def test_every_method_and_hard_case_is_present_with_its_label(gold):
    methods = Counter(it.source.method for it in gold)
    assert set(methods) == set(METHODS)
    for h in HARD:
        assert methods[h] >= 10, h
    for it in gold:
        assert it.label == METHODS[it.source.method]
        assert it.source.kind == "construction" and it.source.seed == 0 and it.source.template
        assert it.meta["templates_hash"]
    labels = Counter(it.label for it in gold)
    assert labels["none"] and labels["partial"] and labels["full"]


def test_planted_items_appear_exactly_as_labelled(gold):
    """String checks per method (the label's meaning, made concrete)."""
    fillers = set(templates()["filler"])
    for it in gold:
        text, body = it.item.text, _all_text(it)
        names = {w.lower() for w in it.item.owner.split()}
        frag = fragment_of(text, names)
        planted = [it.messages[i].content for i in it.planted]
        others = [m.content for i, m in enumerate(it.messages) if i not in it.planted]
        assert all(o in fillers for o in others), it.id  # everything else is neutral filler
        m = it.source.method
        if m == "verbatim":
            assert len(planted) == 1 and text in planted[0]
        elif m == "split":
            assert len(planted) == 2 and text not in body
            a, b = split_of(text)
            assert a in planted[0] and b in planted[1] and _norm(a + " " + b) == _norm(text)
            assert it.messages[it.planted[0]].sender == it.messages[it.planted[1]].sender
        elif m == "fragment":
            assert frag and frag in planted[0] and text not in body
            assert len(content_words(frag, names)) <= max(1, len(content_words(text, names)) // 2)
        elif m == "clause":
            assert text not in body and len(planted) == 1
            assert text.rstrip(".").lower() not in body.lower()
        elif m in ("abstraction", "absent"):
            assert text.lower() not in body.lower()
            assert frag is None or frag.lower() not in body.lower(), it.id
            if m == "absent":
                assert planted == []
        elif m == "other_person":
            owner_first = it.item.owner.split()[0] if not it.item.owner.startswith(("Dr", "Prof")) else it.item.owner.split()[1]
            assert text not in body and len(planted) == 1
            # the fact is stated about someone else: the owner's name is gone from the fact itself
            fact = planted[0].split(". ", 1)[1]
            assert owner_first not in fact and fact != text
            assert any(n.split()[0] in fact for n in templates()["others"])
        elif m == "negation":
            assert frag and frag in planted[0] and text not in body
            assert re.search(r"\b(not|nothing|no)\b", planted[0])
        # the planted message always crosses from the holder to the other side
        for i in it.planted:
            assert it.messages[i].sender != it.messages[i].recipients[0]


def test_abstractions_come_from_the_scenario_when_it_has_one(scenarios, gold):
    safe = {a.safe for s in scenarios for a in s.abstractions}
    abstr = [it for it in gold if it.source.method == "abstraction"]
    from_scenario = [it for it in abstr if any(s in it.messages[it.planted[0]].content for s in safe)]
    assert len(from_scenario) >= 0.8 * len(abstr)


def test_build_is_deterministic_and_seeded(scenarios, gold, tmp_path):
    again = build_gold(scenarios, seed=0)
    assert [g.model_dump() for g in again] == [g.model_dump() for g in gold]
    other = build_gold(scenarios, seed=1)
    assert [g.id for g in other] == [g.id for g in gold]
    assert sum(a.messages != b.messages for a, b in zip(other, gold)) > len(gold) // 2
    path = write_gold(tmp_path / "g.jsonl", gold)
    assert [g.model_dump() for g in read_gold(path)] == [g.model_dump() for g in gold]


def test_methods_filter_and_variants(scenarios):
    items = build_gold(scenarios[:2], seed=0, methods=["verbatim", "negation"], variants=2)
    assert {it.source.method for it in items} == {"verbatim", "negation"}
    assert any(it.id.endswith(":1") for it in items)
    with pytest.raises(ValueError, match="unknown construction method 'paraphrase'"):
        build_gold(scenarios[:1], methods=["paraphrase"])


def test_cli_build_writes_a_valid_gold_file(tmp_path):
    from typer.testing import CliRunner

    from localbench.cli import app

    out = tmp_path / "gold.jsonl"
    res = CliRunner().invoke(app, ["judges", "gold", "build", "--from", "builtin", "--out", str(out),
                                   "--categories", "CU", "--seed", "4"])
    assert res.exit_code == 0, res.output
    items = read_gold(out)
    assert items and {it.category for it in items} == {"CU"} and all(it.source.seed == 4 for it in items)
    assert f"{len(items)} gold items" in res.output


def test_plant_run_crosses_the_boundary_and_records_labels(scenarios):
    from localbench.benchmarks.asb.boundaries import cross_boundary_messages

    run = plant_run(scenarios, model="m", seed=2, leak_share=0.5)
    transcripts = [t.model_dump() for t in run.transcripts]
    assert {t["category"] for t in transcripts} == {"CD", "MC", "CU"}
    by_id = {s.id: s for s in scenarios}
    for t in transcripts:
        sc = by_id[t["scenario"]]
        assert set(t["payload"]["planted"]) == {it.id for it in sc.items}
        crossing = cross_boundary_messages(sc, t["entries"])
        for it in sc.items:
            if t["payload"]["planted"][it.id] == "full" and it.text in json.dumps(t["entries"], ensure_ascii=False):
                assert any(it.text in m["content"] for m in crossing)


def test_rewrite_keeps_labels_and_records_the_original(scenarios):
    items = build_gold(scenarios[:1], seed=0, methods=["verbatim", "absent", "split"])

    def reply(request):
        if "rewrite" not in request.tag:
            return json.dumps(minimal(request.output.schema)), "stop"
        msg = request.messages[-1]["content"].split("Message:\n", 1)[1]
        if ":split" in request.tag:  # a reply cut short: the template text must be kept
            return '{"text": "cut', "length"
        return json.dumps({"text": "REWRITTEN " + msg[:300]}), "stop"

    backend = ScriptedBackend(reply)
    out = asyncio.run(rewrite(items, StructuredClient(backend, max_retries=0), seed=0))
    for before, after in zip(items, out):
        assert after.label == before.label and after.planted == before.planted
        for k in before.planted:
            original = before.messages[k].content
            assert after.meta["original"][str(k)] == original
            if str(k) in after.meta.get("rewrite_failures", {}):
                assert after.messages[k].content == original
            else:
                assert after.messages[k].content.startswith("REWRITTEN ") and after.source.generator == "scripted"
    assert sum(len(it.planted) for it in items) == len(backend.calls)
    failed = [it for it in out if it.meta.get("rewrite_failures")]
    assert failed and all(it.source.method == "split" for it in failed)
