"""AgentSocialBench scenario loading: the upstream release, the asb-mini suite, bad input, data check."""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from localbench.benchmarks.asb.hf_dataset import _decode
from localbench.benchmarks.asb.loaders import BUILTIN_DIR, load_file, load_scenarios
from localbench.benchmarks.asb.scenario import MULTI_PARTY, TIERS
from localbench.benchmarks.asb.upstream import domain_sensitivity, fold
from localbench.benchmarks.asb.issues import ScenarioError
from localbench.errors import UserError

UPSTREAM_COUNTS = {"CD": 107, "MC": 100, "CU": 50, "GC": 37, "AM": 30, "CM": 25, "HS": 23}
PAPER_COUNTS = {"CD": 100, "MC": 100, "CU": 50, "GC": 28, "HS": 23, "CM": 23, "AM": 28}


@pytest.fixture(scope="module")
def asb_dir(shared_datasets: Path) -> Path:
    d = shared_datasets / "agentsocialbench" / "scenarios"
    if not d.is_dir():
        pytest.skip(f"{d} is absent")
    return d


@pytest.fixture(scope="module")
def upstream(asb_dir: Path):
    return load_scenarios(asb_dir)


@pytest.fixture(scope="module")
def raw(asb_dir: Path) -> dict[str, dict]:
    """The upstream JSON as released, by scenario id, to compare the loaded model against."""
    return {p.stem: json.loads(p.read_text()) for p in asb_dir.glob("*/*.json")}


# -- the upstream release ------------------------------------------------------------------------
def test_all_372_upstream_files_load_with_paper_category_counts(upstream, raw):
    assert len(raw) == 372
    assert len(upstream.scenarios) == 372
    assert {s.id for s in upstream.scenarios} == set(raw)
    assert Counter(s.category for s in upstream.scenarios) == UPSTREAM_COUNTS
    assert all(s.items and s.task and s.success_criteria.task_completed for s in upstream.scenarios)
    # deterministic order: category (CD MC CU GC HS CM AM), then id
    order = ["CD", "MC", "CU", "GC", "HS", "CM", "AM"]
    keys = [(order.index(s.category), s.id) for s in upstream.scenarios]
    assert keys == sorted(keys)


def test_upstream_warnings_are_the_coordinator_items_that_name_nobody(upstream, raw):
    # every warning names a file and a field; in this release the only unresolvable thing is a
    # coordinator's item that mentions no participant, whose owner falls back to the holder
    assert upstream.issues, "the release has coordinator items that name no participant"
    for i in upstream.issues:
        assert Path(i.file).exists() and i.field and i.message
        assert re.fullmatch(r"participants\[\d+\]\.privacy_boundary\.must_not_cross\[\d+\]", i.field)
        assert "recorded the holder" in i.message
    n_fallback = sum(len(s.metadata.get("owner_from_holder", [])) for s in upstream.scenarios)
    assert n_fallback == len(upstream.issues)


def test_item_counts_match_the_raw_boundaries(upstream, raw):
    for s in upstream.scenarios:
        r = raw[s.id]
        if s.category in ("CD", "MC"):
            expected = len(r["privacy_boundary"]["must_not_cross"])
        elif s.category == "CU":
            expected = sum(len(v["must_not_cross"]) for k, v in r["privacy_boundary"].items()
                           if k != "minimum_info_needed")
        elif s.category == "AM":
            expected = sum(len(set().union(*map(set, p["privacy_boundary"]["must_not_cross"].values())))
                           for p in r["participants"])
        else:
            expected = sum(len(p["privacy_boundary"]["must_not_cross"]) for p in r["participants"])
        assert len(s.items) == expected, s.id


def test_graph_edges_resolve_first_names_to_participant_ids(upstream, raw):
    n_edges = 0
    for s in upstream.scenarios:
        if s.category not in MULTI_PARTY:
            assert s.graph == []
            continue
        edges = raw[s.id]["social_graph"]["edges"]
        assert len(s.graph) == len(edges) == len(s.people) * (len(s.people) - 1), s.id
        names = {p.id: fold(p.name).lower() for p in s.people}
        for e, r in zip(s.graph, edges):
            # the upstream key is a (lower-case, sometimes accent-less) first name or two
            assert re.search(rf"\b{re.escape(fold(r['from']).lower())}\b", names[e.source]), (s.id, r)
            assert re.search(rf"\b{re.escape(fold(r['to']).lower())}\b", names[e.target]), (s.id, r)
            assert e.affinity == r["affinity"] and e.context == r["context"]
            n_edges += 1
    assert n_edges > 1500
    hs = next(s for s in upstream.scenarios if s.id == "HS_event_organizer_001")
    assert hs.affinity("priya_venkatesh", "marcus_dellacroix") == "close"
    accent = next(s for s in upstream.scenarios if s.id == "HS_hr_recruiter_001")  # edges say "tomas"
    assert any(e.source == "tomas_reyes" for e in accent.graph)
    two_word = next(s for s in upstream.scenarios if s.id == "MG_family_001")  # edges say "lin mei"
    assert sum(e.target == "lin_mei_okafor" for e in two_word.graph) == 3


def test_am_blocked_tiers_are_the_tiers_whose_list_holds_the_item(upstream, raw):
    checked = 0
    for s in upstream.scenarios:
        if s.category != "AM":
            continue
        for part in raw[s.id]["participants"]:
            tiers = part["privacy_boundary"]["must_not_cross"]
            agent = next(a for a in s.agents if s.person(a.user).name == part["user_name"])
            mine = [it for it in s.items if it.holder == agent.id]
            assert {it.text for it in mine} == {t.strip() for lst in tiers.values() for t in lst}
            for it in mine:
                assert it.owner == agent.user
                assert it.blocked_tiers == [t for t in TIERS if it.text in tiers[t]]
                # nested: blocked for a tier means blocked for every less trusted tier
                assert it.blocked_tiers == list(TIERS[TIERS.index(it.blocked_tiers[0]):])
                checked += 1
    assert checked > 300


def test_cu_items_belong_to_the_user_their_key_names(upstream, raw):
    for s in upstream.scenarios:
        if s.category != "CU":
            continue
        pb = raw[s.id]["privacy_boundary"]
        assert len(s.people) == 2 and len(s.agents) == 2
        for key, sub in pb.items():
            if key == "minimum_info_needed":
                continue
            owner = next(p for p in s.people if p.name.split()[0].lower() == key)
            mine = s.items_of(owner.id)
            assert [it.text for it in mine] == [t.strip() for t in sub["must_not_cross"]]
            assert all(s.agent(it.holder).user == owner.id for it in mine)
            assert {a.raw for a in s.abstractions if a.owner == owner.id} == set(sub["acceptable_abstractions"])


def test_coordinator_items_are_owned_by_the_person_the_text_names(upstream):
    hs = next(s for s in upstream.scenarios if s.id == "HS_event_organizer_001")
    hub = next(a for a in hs.agents if a.task_role == "coordinator")
    held = [it for it in hs.items if it.holder == hub.id]
    assert len(held) == 12
    for it in held:
        first = it.text.split("'")[0]
        assert hs.person(it.owner).name.startswith(first), it
    assert {it.owner for it in held} == {"marcus_dellacroix", "jasmine_okafor", "david_huang", "sofia_reyes"}
    # an item that names nobody stays with the holder and is reported
    cm = next(s for s in upstream.scenarios if s.id == "CM_dating_matching_001_050258")
    [fallback] = cm.metadata["owner_from_holder"]
    it = next(i for i in cm.items if i.id == fallback)
    assert it.owner == cm.agent(it.holder).user and it.text.startswith("Any details")


def test_an_item_about_another_participant_is_never_forbidden_to_them(upstream):
    """Patricia's list holds "Lucia Fernandez's DACA status": Lucia hearing it is no leak."""
    from localbench.benchmarks.asb.boundaries import forbidden_recipients

    by_id = {s.id: s for s in upstream.scenarios}
    gc = by_id["MG_classroom_001_041737"]
    it = next(i for i in gc.items if i.text == "Lucia Fernandez's DACA status")
    assert (it.owner, it.about) == ("patricia_okonkwo", "lucia_fernandez")
    assert "lucia_fernandez" not in forbidden_recipients(gc, it) and forbidden_recipients(gc, it)
    am = by_id["AM_asymmetric_relationship_001_042543"]
    kyle = next(i for i in am.items if i.text.startswith("Kyle's PTSD"))
    assert kyle.about == "kyle_reeves" and "kyle_reeves" not in forbidden_recipients(am, kyle)
    # naming someone later is not being about them: Diana's worry stays hidden from Jun too
    worry = next(i for s in upstream.scenarios for i in s.items if i.text.startswith("Her private worry that Jun"))
    assert worry.about is None
    about = [i for s in upstream.scenarios for i in s.items if i.about]
    assert len(about) == 98 and all(i.about != i.owner for i in about)
    assert {s.category for s in upstream.scenarios if any(i.about for i in s.items)} == {"GC", "HS", "CM", "AM"}


def test_a_parenthetical_after_a_name_is_not_part_of_it(upstream, raw):
    s = next(s for s in upstream.scenarios if s.id == "HS_teacher_advisor_001")
    assert [p.name for p in s.people] == [p["user_profile"]["name"] for p in raw[s.id]["participants"]]
    assert "miguel_alvarez" in {p.id for p in s.people}


def test_sensitivity_nested_under_sub_facts_is_read(upstream):
    by_id = {s.id: s for s in upstream.scenarios}
    zuri = next(p for p in by_id["CU_museum_walkscheduling_014"].people if p.name == "Zuri Mitchell")
    assert zuri.sensitivity["health"] == 5 and "finance" in zuri.sensitivity
    assert all(p.sensitivity for p in by_id["MC_photowalk_dinner_017"].people)


def test_mc_other_party_is_a_simulated_person(upstream, raw):
    for s in upstream.scenarios:
        if s.category != "MC":
            continue
        human = raw[s.id]["humans"][0]
        [sim] = [p for p in s.people if p.simulated]
        assert sim.name == human["name"] and sim.persona == human["persona"] and sim.knowledge == human["knowledge"]
        assert sim.profile  # the other party's embedded profile travels with them
        [agent] = s.agents
        assert not s.person(agent.user).simulated
        assert all(it.owner == agent.user and it.holder == agent.id for it in s.items)


def test_cd_domains_and_item_sensitivity(upstream, raw):
    for s in upstream.scenarios:
        if s.category != "CD":
            continue
        meta = raw[s.id]["metadata"]
        assert (s.source_domain, s.target_domain) == (meta["source_domain"], meta["target_domain"])
        assert {s.agent(it.holder).domain for it in s.items} == {s.source_domain}
        person = s.people[0]
        assert all(it.domain == s.source_domain for it in s.items)
        assert all(it.sensitivity == person.sensitivity.get(s.source_domain) for it in s.items)
    with_labels = [s for s in upstream.scenarios if s.category == "CD" and s.items[0].sensitivity]
    assert len(with_labels) > 90


def test_multi_party_profiles_keep_domain_level_sensitivity(upstream, raw):
    s = next(s for s in upstream.scenarios if s.id == "HS_event_organizer_001")
    for part, person in zip(raw[s.id]["participants"], s.people):
        expected = {d: v["sensitivity"] for d, v in part["user_profile"].items()
                    if isinstance(v, dict) and "sensitivity" in v}
        assert person.sensitivity == expected
        assert person.profile["health"] == part["user_profile"]["health"]  # opaque, untouched


def test_item_ids_are_stable_and_follow_owner_n(asb_dir, upstream):
    again = load_scenarios(asb_dir, categories=["HS", "AM"])
    first = {s.id: [i.id for i in s.items] for s in upstream.scenarios if s.category in ("HS", "AM")}
    assert {s.id: [i.id for i in s.items] for s in again.scenarios} == first
    for s in upstream.scenarios:
        for it in s.items:
            assert re.fullmatch(rf"{re.escape(it.owner)}\.\d+", it.id)


def test_paper_subset_is_352(asb_dir):
    res = load_scenarios(asb_dir, subset="paper")
    assert Counter(s.category for s in res.scenarios) == PAPER_COUNTS
    assert sum(PAPER_COUNTS.values()) == 352
    # the pilots the notes name are out
    ids = {s.id for s in res.scenarios}
    assert "CM_job_market_001" not in ids and "AM_mixed_closeness_friends_001" not in ids
    assert "MG_family_001" not in ids and "CD_health_social_001" not in ids


def test_category_filter_and_per_category_limit(asb_dir):
    res = load_scenarios(asb_dir, categories=["am", "cross_domain"], limit=3)
    assert [s.category for s in res.scenarios] == ["CD"] * 3 + ["AM"] * 3
    cd = [s.id for s in res.scenarios if s.category == "CD"]
    assert cd == sorted(cd)
    with pytest.raises(ScenarioError, match="unknown category 'XX'"):
        load_scenarios(asb_dir, categories=["XX"])


def test_upstream_ids_do_not_appear_in_shipped_files(upstream):
    ids = {s.id for s in upstream.scenarios}
    text = "\n".join(p.read_text() for p in BUILTIN_DIR.rglob("*.yaml"))
    assert not [i for i in ids if i in text]
    names = {p.name for s in upstream.scenarios for p in s.people}
    assert not [n for n in names if n in text]


# -- the repo's own suite ----------------------------------------------------------------------------
def test_builtin_asb_mini():
    res = load_scenarios("builtin")
    assert res.issues == []
    per = Counter(s.category for s in res.scenarios)
    assert set(per) == set(UPSTREAM_COUNTS) and min(per.values()) >= 2
    for s in res.scenarios:
        assert 3 <= len(s.items) <= 5, s.id
        assert s.abstractions and s.success_criteria.privacy_preserved
        assert Path(s.source).is_file() and Path(s.source).stem == s.id
        if s.category in MULTI_PARTY:
            n = len(s.people)
            assert 3 <= n <= 4 and len(s.graph) == n * (n - 1)
            asym = [e for e in s.graph if s.affinity(e.target, e.source) != e.affinity]
            assert asym, f"{s.id}: graph has no asymmetric tier"
        if s.category == "AM":
            assert all(it.blocked_tiers for it in s.items)
        if s.category in ("HS", "CM"):
            assert sum(a.task_role == "coordinator" for a in s.agents) == 1
        if s.category == "MC":
            assert sum(p.simulated for p in s.people) == 1
        if s.category == "CD":
            assert s.source_domain and s.target_domain
    assert len(load_scenarios("builtin", limit=1).scenarios) == 7


def test_unknown_source_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no such file or directory"):
        load_scenarios(str(tmp_path / "nope"))
    with pytest.raises(ScenarioError, match="no built-in suite 'nope'"):
        load_scenarios("builtin:nope")


# -- malformed input ---------------------------------------------------------------------------------
def _dyadic() -> dict:
    return {
        "scenario_id": "T_dyadic", "category": "cross_domain", "task": "Plan a dinner.",
        "user_profiles": [{"name": "Ana Lima", "health": {"conditions": {"value": ["x"], "sensitivity": 4}}}],
        "privacy_boundary": {"must_not_cross": ["Ana's diagnosis"], "acceptable_abstractions": {},
                             "minimum_info_needed": []},
        "success_criteria": {"task_completed": "dinner planned", "privacy_preserved": "no diagnosis"},
        "agents": [{"role": "health_agent", "domain": "health", "knows": [], "should_share": [],
                    "must_not_share": []},
                   {"role": "social_agent", "domain": "social", "knows": [], "should_share": [],
                    "must_not_share": []}],
        "humans": [], "metadata": {"source_domain": "health", "target_domain": "social"},
    }


def _multi() -> dict:
    def part(name: str) -> dict:
        return {"user_name": name, "agent_name": f"{name.split()[0].lower()}_agent", "task_role": "participant",
                "system_prompt_context": f"You are {name}.", "user_profile": {},
                "privacy_boundary": {"must_not_cross": [f"{name}'s secret"], "acceptable_abstractions": {}}}

    return {
        "scenario_id": "T_multi", "category": "multi_party_group", "task": "Plan a trip.",
        "participants": [part("Ana Lima"), part("Bo Chen")],
        "social_graph": {"edges": [{"from": "ana", "to": "bo", "context": "", "affinity": "close"},
                                   {"from": "bo", "to": "ana", "context": "", "affinity": "friend"}]},
        "success_criteria": {"task_completed": "trip planned", "privacy_preserved": "-"},
        "metadata": {"sub_type": "friend_group"},
    }


def _write(tmp_path: Path, name: str, data) -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


def test_minimal_upstream_files_load(tmp_path):
    sc, issues = load_file(_write(tmp_path, "d.json", _dyadic()))
    assert sc.category == "CD" and [i.id for i in sc.items] == ["ana_lima.1"] and issues == []
    assert sc.items[0].holder == "health_agent" and sc.items[0].sensitivity == 4
    sc, issues = load_file(_write(tmp_path, "m.json", _multi()))
    assert [(e.source, e.target, e.affinity) for e in sc.graph] == [("ana_lima", "bo_chen", "close"),
                                                                     ("bo_chen", "ana_lima", "friend")]


def _mutated(base: dict, path: list, value=None, delete: bool = False) -> dict:
    d = copy.deepcopy(base)
    tgt = d
    for k in path[:-1]:
        tgt = tgt[k]
    if delete:
        del tgt[path[-1]]
    else:
        tgt[path[-1]] = value
    return d


@pytest.mark.parametrize("case, data, field", [
    ("missing task", lambda: _mutated(_dyadic(), ["task"], delete=True), "task"),
    ("missing agents", lambda: _mutated(_dyadic(), ["agents"], delete=True), "agents"),
    ("missing user_name", lambda: _mutated(_multi(), ["participants", 1, "user_name"], delete=True),
     "participants[1].user_name"),
    ("items not a list", lambda: _mutated(_dyadic(), ["privacy_boundary", "must_not_cross"], 5),
     "privacy_boundary.must_not_cross"),
    ("item not a string", lambda: _mutated(_multi(), ["participants", 0, "privacy_boundary", "must_not_cross"], [3]),
     "participants[0].privacy_boundary.must_not_cross[0]"),
    ("task not a string", lambda: _mutated(_multi(), ["task"], ["a"]), "task"),
    ("unknown edge participant", lambda: _mutated(_multi(), ["social_graph", "edges", 1, "to"], "zed"),
     "social_graph.edges[1].to"),
    ("bad affinity", lambda: _mutated(_multi(), ["social_graph", "edges", 0, "affinity"], "bestie"),
     "social_graph.edges[0].affinity"),
    ("unknown category", lambda: _mutated(_multi(), ["category"], "chat"), "category"),
])
def test_malformed_upstream_names_file_and_field(tmp_path, case, data, field):
    f = _write(tmp_path, "bad.json", data())
    with pytest.raises(ScenarioError) as e:
        load_file(f)
    assert e.value.field == field, case
    assert str(f) in str(e.value) and f"field '{field}'" in str(e.value)
    assert isinstance(e.value, UserError)


def test_an_item_on_ones_list_about_another_is_about_them(tmp_path):
    from localbench.benchmarks.asb.boundaries import forbidden_recipients

    data = _multi()
    data["participants"][0]["privacy_boundary"]["must_not_cross"] += ["That Bo is moving away",
                                                                      "My doubts about Bo"]
    sc, _ = load_file(_write(tmp_path, "m.json", data))
    about = {it.text: it.about for it in sc.items}
    assert about == {"Ana Lima's secret": None, "That Bo is moving away": "bo_chen",
                     "My doubts about Bo": None, "Bo Chen's secret": None}
    moving = next(it for it in sc.items if it.about)
    assert forbidden_recipients(sc, moving) == [] and "about" in moving.model_dump()
    assert "about" not in sc.items[0].model_dump()  # absent when empty: such scenarios keep their hash


def test_bad_json_names_the_file(tmp_path):
    f = _write(tmp_path, "broken.json", '{"scenario_id": "x", ')
    with pytest.raises(ScenarioError, match=r"broken\.json: not valid JSON"):
        load_file(f)
    with pytest.raises(ScenarioError, match=r"broken\.json: not valid JSON"):
        load_scenarios(str(tmp_path))


def test_malformed_normalized_names_file_and_field(tmp_path):
    good = (BUILTIN_DIR / "gc" / "gc-seventieth.yaml").read_text()
    sc, issues = load_file(_write(tmp_path, "ok.yaml", good))
    assert sc.id == "gc-seventieth" and issues == []
    cases = {
        "missing success": (re.sub(r"success_criteria:\n(  .*\n)+", "", good), "success_criteria",
                            "missing required field"),
        "wrong type": (good.replace("sensitivity: 5,\n     text: Gudrun", "sensitivity: high,\n     text: Gudrun"),
                       "items[0].sensitivity", "integer"),
        "unknown edge participant": (good.replace("{source: gudrun_nowak, target: bartek_nowak",
                                                  "{source: gudrun_nowak, target: nobody_here", 1),
                                     "graph[0].target", "unknown participant 'nobody_here'"),
        "unknown field": (good.replace("subtype: family", "subtype: family\nflavour: sweet"), "flavour",
                          "unknown field"),
        # participants are told apart by id (visibility, system prompts): a clash would merge two of them
        "agent id used twice": (good.replace("  - id: bartek_agent", "  - id: gudrun_agent", 1), "agents[1].id",
                                "'gudrun_agent' is used twice"),
        "agent id is a person's": (good.replace("  - id: gudrun_agent", "  - id: bartek_nowak", 1),
                                   "agents[0].id", "'bartek_nowak' is also a person's id"),
        "reserved id": (good.replace("  - id: gudrun_agent", "  - id: system", 1), "agents[0].id", "reserved"),
    }
    for case, (text, field, msg) in cases.items():
        assert text != good, case
        f = _write(tmp_path, "bad.yaml", text)
        with pytest.raises(ScenarioError) as e:
            load_file(f)
        assert e.value.field == field, (case, str(e.value))
        assert str(f) in str(e.value) and msg in str(e.value), case


def test_duplicate_ids_are_rejected(tmp_path):
    for n in ("a.json", "b.json"):
        _write(tmp_path, n, _multi())
    with pytest.raises(ScenarioError, match=r"b\.json: field 'id': scenario id 'T_multi' is also used by .*a\.json"):
        load_scenarios(str(tmp_path))


# -- helpers -------------------------------------------------------------------------------------------
def test_domain_sensitivity_handles_every_upstream_shape():
    labels, bad = domain_sensitivity({
        "name": "X",
        "demographics": {"age": 40},                                  # an age, not a label
        "health": {"conditions": ["a"], "sensitivity": 5},             # domain-level wins
        "finance": {"debt": {"value": "x", "sensitivity": 2}, "income": {"value": "y", "sensitivity": 3}},
        "schedule": {"work_hours": 3, "gym": 1},                       # bare ints
        "social": {"relationships": {"sister": 2, "ex": 4}},           # {fact: label}
        "lifestyle": {"hobbies": ["chess"]},                           # no label at all
        "professional": {"role": {"value": "x", "sensitivity": 9}},    # out of range
        "work": {"events": {"review": {"when": "Mon", "sensitivity": 4}, "budget": {"amount": 900}}},
        "legal": {"cases": [{"what": "x", "sensitivity": 2}, {"what": "y", "sensitivity": 3}]},
    })
    assert labels == {"health": 5, "finance": 3, "schedule": 3, "social": 4, "work": 4, "legal": 3}
    assert bad == [("professional.role.sensitivity", 9)]


def test_without_note_keeps_the_name_and_drops_a_trailing_parenthetical():
    from localbench.benchmarks.asb.upstream import without_note

    assert without_note("Miguel Alvarez (age 29, PhD Candidate (Computer Science))") == "Miguel Alvarez"
    assert without_note("Ana Lima") == "Ana Lima"
    assert without_note("(only a note)") == "(only a note)"
    assert without_note("Ana (Lima") == "Ana (Lima"


def test_hf_columns_stored_as_json_text_are_decoded():
    row = _decode({"scenario_id": "X", "privacy_boundary": '{"must_not_cross": ["a"]}', "task": "[not json",
                   "participants": "[]"})
    assert row == {"scenario_id": "X", "privacy_boundary": {"must_not_cross": ["a"]}, "task": "[not json",
                   "participants": []}


# -- localbench data check -------------------------------------------------------------------------------
def _cli():
    from localbench.cli import app

    return app


def test_data_check_good_directory(tmp_path):
    good = tmp_path / "suite"
    shutil.copytree(BUILTIN_DIR, good)
    r = CliRunner().invoke(_cli(), ["data", "check", str(good)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "14 files: 14 loaded, ok, 0 warnings" in r.output
    assert re.search(r"│ AM\s+│\s+2 │", r.output)


def test_data_check_bad_directory_fails_and_names_each_file(tmp_path):
    shutil.copytree(BUILTIN_DIR / "cd", tmp_path / "cd")
    _write(tmp_path, "broken.json", "{ nope")
    _write(tmp_path, "edge.json", _mutated(_multi(), ["social_graph", "edges", 0, "from"], "zed"))
    r = CliRunner().invoke(_cli(), ["data", "check", str(tmp_path)], env={"COLUMNS": "400"})
    assert r.exit_code == 1, r.output
    assert f"{tmp_path / 'broken.json'}: not valid JSON" in r.output
    assert "field 'social_graph.edges[0].from': 'zed' matches no participant" in r.output
    assert "4 files: 2 loaded, 2 failed" in r.output


def test_data_check_upstream_release(asb_dir):
    r = CliRunner().invoke(_cli(), ["data", "check", str(asb_dir)], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    assert "372 files: 372 loaded, ok" in r.output
    assert re.search(r"│ total\s+│\s+372 │.*│\s+352 │", r.output)


def test_the_paper_subset_is_reached_from_a_spec_and_from_a_flag(asb_dir, tmp_path):
    """The paper's 352 scenarios were reachable only from Python (issue 47, item 18): a spec's
    ``extra: {subset: paper}`` and ``--setting subset=paper`` now load them for a run, and a spec
    that does not name the setting is the spec it was (its run id does not move)."""
    import yaml

    from localbench.benchmarks.asb.simulate import AsbSimulator
    from localbench.commands.spec_flags import spec_from_flags

    flagged = spec_from_flags(None, benchmark="asb", scenarios=str(asb_dir), setting=["subset=paper"])
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump({"benchmark": "asb", "scenarios": str(asb_dir), "extra": {"subset": "paper"}}))
    from_file = spec_from_flags(spec_file)
    for spec in (flagged, from_file):
        assert spec.extra == {"subset": "paper"}
        scenarios, _ = AsbSimulator().load(spec)
        assert Counter(s.category for s in scenarios) == PAPER_COUNTS
    unset = spec_from_flags(None, benchmark="asb", scenarios=str(asb_dir))
    assert unset.extra == {} and len(AsbSimulator().load(unset)[0]) == sum(UPSTREAM_COUNTS.values())


def test_the_subset_setting_is_declared_checked_and_named_in_help():
    """The setting is AgentSocialBench's declared one (so the spec reference and `data design` list it),
    `run --help` names it, a value that is not a subset is refused naming the field, and a source that
    is not the upstream release refuses the paper subset."""
    from localbench.benchmarks.asb.simulate import AsbSimulator
    from localbench.cli import app
    from localbench.commands.spec_flags import spec_from_flags
    from localbench.registry import design_of

    assert "subset" in design_of("asb").settings.model_fields
    for command in ("run", "simulate"):
        shown = CliRunner().invoke(app, [command, "--help"], terminal_width=400)
        assert "--setting" in shown.output and "subset" in shown.output, command
    with pytest.raises(UserError, match=r"extra\.subset"):
        spec_from_flags(None, benchmark="asb", setting=["subset=papers"])
    with pytest.raises(UserError, match="NAME=VALUE"):
        spec_from_flags(None, benchmark="asb", setting=["subset"])
    with pytest.raises(ScenarioError, match="upstream release"):
        AsbSimulator().load(spec_from_flags(None, benchmark="asb", setting=["subset=paper"]))
