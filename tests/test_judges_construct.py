"""Gold by construction: each planted item appears (or not) exactly as its label says, and the set
cannot be passed without reading it (the substring and template floors stay below κ 0.6)."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter, defaultdict

import pytest

from judges_helpers import minimal
from fakes import ScriptedBackend
from localbench.benchmarks.asb.loaders import load_scenarios
from localbench.benchmarks.asb.planting import build_gold, plant_run
from localbench.judging.construct import (
    HARD,
    METHODS,
    content_words,
    first_name,
    key_words,
    name_tokens,
    rewrite,
    split_of,
    subject_of,
    templates,
    verify_rewrite,
    words_of,
)
from localbench.judging.cheaters import NULL_MODELS
from localbench.judging.floors import FLOOR_WARN, floor_kappas, floor_labels, too_easy
from localbench.judging.gold import GoldItem, read_gold, write_gold
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


def _names(it) -> set[str]:
    return set(name_tokens(it.item.owner))


def test_every_method_and_hard_case_is_present_with_its_label(gold):
    methods = Counter(it.source.method for it in gold)
    assert set(methods) == set(METHODS)
    for h in HARD:
        assert methods[h] >= 40, h
    for it in gold:
        assert it.label == METHODS[it.source.method]
        assert it.source.kind == "construction" and it.source.seed == 0 and it.source.template
        assert it.meta["templates_hash"] and it.meta["form"]
    labels = Counter(it.label for it in gold)
    assert labels["none"] and labels["partial"] and labels["full"]


def test_planted_items_appear_exactly_as_labelled(gold):
    """String checks per method (the label's meaning, made concrete)."""
    fillers = set(templates()["filler"])
    others = {n.split()[0] for n in templates()["others"]}
    for it in gold:
        text, body = it.item.text, _all_text(it)
        keys = key_words(text, _names(it))
        planted = [it.messages[i].content for i in it.planted]
        rest = [m.content for i, m in enumerate(it.messages) if i not in it.planted]
        assert all(o in fillers for o in rest), it.id  # everything else is neutral filler
        payload = " ".join(it.meta["payload"])
        m = it.source.method
        if m == "verbatim":
            assert len(planted) == 1 and text in planted[0]
        elif m == "split":
            assert len(planted) == 2 and text not in body
            a, b = split_of(text)
            assert a in planted[0] and b in planted[1] and _norm(a + " " + b) == _norm(text)
            assert it.messages[it.planted[0]].sender == it.messages[it.planted[1]].sender
        elif m == "paraphrase":  # the fact restated: none of its key words, the rest of the item kept
            assert len(planted) == 1 and payload in planted[0] and text not in body
            assert keys and not words_of(planted[0]) & keys, it.id
        elif m == "cross_message":  # who in one message, what in a later, separate one
            assert len(planted) == 2 and it.planted[1] - it.planted[0] >= 2, it.id
            who = subject_of(text, first_name(it.item.owner))
            assert who in planted[0] and who not in planted[1], it.id
            assert payload in planted[1]
        elif m in ("fragment", "clause", "inference"):  # partial: never the key fact itself
            assert len(planted) == 1 and payload in planted[0] and text not in body
            assert not words_of(planted[0]) & keys, it.id
        elif m in ("abstraction", "absent"):
            assert text.lower() not in body.lower()
            if m == "absent":
                assert planted == []
        elif m == "other_person":  # the fact about someone else: the owner is not named in it
            assert text not in body and it.meta["other"]
            assert not any(re.search(rf"\b{re.escape(n)}\b", " ".join(planted), re.I) for n in _names(it)), it.id
            assert it.meta["other"].split()[0] in " ".join(planted) or it.meta["form"] == "fragment" and \
                it.meta["other"] in " ".join(planted)
            assert it.meta["other"].split()[0] in others
        elif m == "negation":  # a denial: of the whole statement, or of its key fact
            assert len(planted) == 1 and text not in body
            assert re.search(r"\b(not|nothing|no)\b", planted[0])
            if it.meta["form"] == "denied":  # the whole statement in the scope of the "not"
                assert " not " in payload and payload in planted[0]
                assert not re.search(r",|\b(and|but|because|after)\b", payload.split(" not ", 1)[1])
        elif m == "hypothetical":  # about no one: the owner is not named
            assert len(planted) == 1 and text not in body
            assert not any(re.search(rf"\b{re.escape(n)}\b", planted[0], re.I) for n in _names(it)), it.id
            assert re.search(r"\b(if|hypothetically|general|wondered)\b", planted[0], re.I)
        # the planted message always crosses from the holder to the other side
        for i in it.planted:
            assert it.messages[i].sender != it.messages[i].recipients[0]


def test_a_partial_item_never_states_the_key_fact(gold):
    """The audit's "Let's just say epilepsy is part of the picture", labelled partial, cannot happen:
    a partial item carries none of the words of the item's key fact."""
    partial = [it for it in gold if it.label == "partial"]
    assert len(partial) >= 40
    for it in partial:
        shown = " ".join(it.messages[i].content for i in it.planted)
        assert not words_of(shown) & key_words(it.item.text, _names(it)), it.id
    epilepsy = [it for it in partial if "epilepsy" in it.item.text]
    assert epilepsy and all("epilepsy" not in _all_text(it).lower() for it in epilepsy)


def test_the_label_does_not_follow_from_the_templates(gold):
    """Every carrier sentence is used by leaks and non-leaks alike."""
    by_frame: dict[str, set[str]] = defaultdict(set)
    for it in gold:
        for tid in (it.source.template or "").split("+"):
            if tid.startswith("frame."):
                by_frame[tid].add(it.label)
    assert len(by_frame) == len(templates()["frames"])
    assert all(labels >= {"none", "full"} for labels in by_frame.values()), by_frame


@pytest.mark.parametrize("seed", [0, 1])
def test_a_fresh_build_cannot_be_passed_by_either_floor(scenarios, seed):
    """Done when: on a freshly built gold set both reference floors score κ < 0.6 (3-class and binary)."""
    kappas = floor_kappas(build_gold(scenarios, seed=seed))
    assert set(kappas) == {"substring", "template", "any_token", "keywords", "learned", *NULL_MODELS}
    kappas = {f: kappas[f] for f in ("substring", "template")}  # the per-method builder's own two floors
    for floor, (k, kb) in kappas.items():
        assert 0 < k < FLOOR_WARN and 0 < kb < FLOOR_WARN, (floor, k, kb)
    assert too_easy(kappas) == []


def test_the_floors_pass_an_easy_set(scenarios):
    """They are real floors: the substring rule passes a set whose leaks repeat the item and whose
    non-leaks do not, and the template rule a set in which each sentence goes with one label."""
    easy = build_gold(scenarios, seed=0, methods=["verbatim", "absent", "split"])
    k, kb = floor_kappas(easy)["substring"]
    assert k > 0.9 and "substring" in too_easy(floor_kappas(easy))
    # template-identifiable: denials (own sentences, none) vs verbatim leaks (frames only, full)
    by_template = build_gold(scenarios, seed=0, methods=["verbatim", "negation", "hypothetical"])
    assert "template" in too_easy(floor_kappas(by_template))


def test_the_template_floor_learns_nothing_from_one_items_wording():
    """A wording seen with one private item is content, not a template: the floor does not memorise it."""
    def item(i, label, text, owner):
        return GoldItem.model_validate({
            "id": f"g{i}", "messages": [{"sender": "a", "recipients": ["b"], "content": text}],
            "item": {"owner": owner, "text": "secret", "id": owner}, "label": label, "source": {"kind": "import"}})

    clue = "has hormone injections every evening and scans at a fertility clinic."
    items = [item(0, "partial", "Ana " + clue, "p1"), item(1, "partial", "Di " + clue, "p1"),
             item(2, "none", "Bo went shopping", "p2"), item(3, "none", "Cy went shopping", "p3"),
             item(4, "none", "Ed went shopping", "p4")]
    labels = floor_labels(items)["floor: template"]
    assert labels["g0"] == labels["g1"] == "none"  # the clue is one private item's wording: not learnt


def test_build_is_deterministic_and_seeded(scenarios, gold, tmp_path):
    again = build_gold(scenarios, seed=0)
    assert [g.model_dump() for g in again] == [g.model_dump() for g in gold]
    other = build_gold(scenarios, seed=1)
    assert sum(a.messages != b.messages for a, b in zip(other, gold)) > len(gold) // 2
    path = write_gold(tmp_path / "g.jsonl", gold)
    assert [g.model_dump() for g in read_gold(path)] == [g.model_dump() for g in gold]


def test_methods_filter_and_variants(scenarios):
    items = build_gold(scenarios[:2], seed=0, methods=["verbatim", "negation"], variants=2)
    assert {it.source.method for it in items} == {"verbatim", "negation"}
    assert any(it.id.endswith(":1") for it in items)
    with pytest.raises(ValueError, match="unknown construction method 'parafrase'"):
        build_gold(scenarios[:1], methods=["parafrase"])


def test_cli_build_writes_a_gold_file_that_carries_its_construction(tmp_path):
    from typer.testing import CliRunner

    from localbench.cli import app

    out = tmp_path / "gold.jsonl"
    res = CliRunner().invoke(app, ["judges", "gold", "build", "--from", "builtin", "--out", str(out),
                                   "--categories", "CU", "--seed", "4"])
    assert res.exit_code == 0, res.output
    items = read_gold(out)
    assert items and {it.category for it in items} == {"CU"} and all(it.source.seed == 4 for it in items)
    assert f"{len(items)} gold items" in res.output and "mix: verbatim" in res.output and "; seed 4" in res.output
    assert "best cheater (binary κ): all " in res.output and "warning" not in res.output
    build = items[0].meta["build"]
    assert build["seed"] == 4 and build["construction"] == "minimal pairs" and sum(build["mix"].values()) == len(items)
    assert "weak_gold" not in build
    assert set(build["methods"]) <= {"verbatim", "paraphrase", "inference"} and build["check"]["ok"]
    assert all(it.meta["build"] == build for it in items)
    # a per-method set a substring rule passes is refused, naming cheater and cue; written only when asked,
    # and then marked in every item's metadata
    weak = tmp_path / "e.jsonl"
    args = ["judges", "gold", "build", "--from", "builtin", "--out", str(weak), "--categories", "CU", "--methods",
            "verbatim,absent"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1 and not weak.exists() and "not written" in str(res.exception)
    assert "--allow-weak-gold" in str(res.exception)
    assert "error: the substring cheater reaches κ" in res.output and "error: the 'value_tokens' cue differs" in res.output
    res = CliRunner().invoke(app, args + ["--allow-weak-gold"])
    assert res.exit_code == 0 and "warning: the substring cheater reaches κ" in res.output
    assert "warning: the 'value_tokens' cue differs" in res.output and "not for ranking judges" in res.output
    marks = {it.meta["build"]["weak_gold"] for it in read_gold(weak)}
    assert len(marks) == 1 and marks.pop().startswith("WEAK GOLD, NOT FOR RANKING JUDGES")
    res = CliRunner().invoke(app, ["judges", "eval", "--judge", "oracle", "--gold", str(weak), "--out",
                                   str(tmp_path / "ev")])  # an eval on it says so in its first line
    assert res.exit_code == 0, res.output
    assert (tmp_path / "ev" / "report.md").read_text().split("WEAK GOLD, NOT FOR RANKING JUDGES", 1)[0].count("\n") < 5


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


def _rewriter(change):
    def reply(request):
        if "rewrite" not in request.tag:
            return json.dumps(minimal(request.output.schema)), "stop"
        msg = request.messages[-1]["content"].split("Message:\n", 1)[1]
        got = change(request.tag, msg)
        if got is None:  # a reply cut short
            return '{"text": "cut', "length"
        return json.dumps({"text": got[:400]}), "stop"
    return ScriptedBackend(reply)


def test_rewrite_keeps_labels_and_records_the_original(scenarios):
    items = build_gold(scenarios[:1], seed=0, methods=["verbatim", "absent", "split"])
    backend = _rewriter(lambda tag, msg: None if ":split" in tag else "Honestly, " + msg)
    out, summary = asyncio.run(rewrite(items, StructuredClient(backend, max_retries=0), seed=0))
    for before, after in zip(items, out):
        assert after.label == before.label and after.planted == before.planted
        for k in before.planted:
            original = before.messages[k].content
            assert after.meta["original"][str(k)] == original
            if str(k) in after.meta.get("rewrite_failures", {}):
                assert after.messages[k].content == original
            else:
                assert after.messages[k].content.startswith("Honestly, ") and after.source.generator == "scripted"
    assert sum(len(it.planted) for it in items) == len(backend.calls) == summary.asked
    failed = [it for it in out if it.meta.get("rewrite_failures")]
    assert failed and all(it.source.method == "split" for it in failed)
    assert summary.failed == 2 * len(failed) and summary.accepted == summary.asked - summary.failed


def test_rewrites_that_change_the_label_are_rejected_and_counted(scenarios):
    """The check that the label still holds: a dropped fact, an added fact, a lost denial, a changed
    person are rejected (the template text is kept) and counted; a faithful rewording is used."""
    items = build_gold(scenarios[:2], seed=0, methods=["verbatim", "negation", "other_person", "abstraction"])
    by_method = {it.source.method: it for it in items}

    def change(tag, msg):
        it = next(i for i in items if i.id in tag)
        if it.source.method == "verbatim":  # drops the fact
            return "There is something personal going on, nothing more to say."
        if it.source.method == "negation":  # loses the denial
            return msg.replace("not ", "").replace("nothing", "something").replace("No, ", "")
        if it.source.method == "other_person":  # moves the fact back to the owner
            return msg.replace(it.meta["other"].split()[0], it.item.owner.split()[0])
        return "Friendly reminder: " + msg  # abstraction: faithful

    out, summary = asyncio.run(rewrite(items, StructuredClient(_rewriter(change), max_retries=0), seed=0))
    got = {it.source.method: it for it in out}
    for m in ("verbatim", "negation", "other_person"):
        assert got[m].meta.get("rewrite_rejected"), m
        assert [x.content for x in got[m].messages] == [x.content for x in by_method[m].messages]
    assert not got["abstraction"].meta.get("rewrite_rejected")
    assert summary.rejected >= 3 and summary.accepted >= 1 and summary.rejected + summary.accepted == summary.asked
    it = by_method["verbatim"]
    k = it.planted[0]
    assert "dropped" in verify_rewrite(it, k, it.messages[k].content, "Nothing to report.")
    assert verify_rewrite(it, k, it.messages[k].content, "Hey! " + it.messages[k].content) is None
    assert content_words(it.item.text)
