"""The privacy ladder: each level's system prompt holds exactly its components, in both engines."""

from __future__ import annotations

import pytest

from localbench.benchmarks.asb.dyadic import DyadicSimulation
from localbench.benchmarks.asb.engine import human_system_prompt
from localbench.benchmarks.asb.graph import GraphSimulation
from localbench.benchmarks.asb.ladder import MARKERS, LevelError, resolve_level, resolve_levels
from localbench.benchmarks.asb.loaders import load_scenarios
from localbench.benchmarks.asb.prompting import render
from localbench.benchmarks.asb.simulate import engine_for

LEVELS = ["L0", "L1", "L2", "implicit", "enhanced", "zdd"]


@pytest.fixture(scope="module")
def suite():
    by_cat = load_scenarios("builtin").by_category()
    missing = {"CD", "MC", "CU", "GC", "HS", "CM", "AM"} - set(by_cat)
    assert not missing, f"the builtin suite lacks categories {missing}"
    return {cat: scs[0] for cat, scs in by_cat.items()}


def markers_in(text: str) -> set[str]:
    return {name for name, heading in MARKERS.items() if heading in text}


def test_level_names_resolve_and_the_released_numbering_is_refused():
    assert resolve_level("L0").mode == "unconstrained"
    assert resolve_level("unconstrained").label == "L0"
    assert resolve_level("explicit").label == "L1" and resolve_level("l1").label == "L1"
    assert resolve_level("full_defense").label == "L2"
    assert [lv.label for lv in resolve_levels(["L0", "unconstrained", "zdd"])] == ["L0", "zdd"]
    with pytest.raises(LevelError, match="L3/L4 numbering is not used"):
        resolve_level("L4")
    with pytest.raises(LevelError, match="unknown privacy level 'L9'"):
        resolve_level("L9")


def test_the_ladder_adds_and_never_removes():
    l0, l1, l2 = (set(resolve_level(x).components) for x in ("L0", "L1", "L2"))
    assert l0 == set() and l0 < l1 < l2
    assert l2 - l1 == {"domain_boundary", "abstraction_templates", "minimal_information"}
    assert set(resolve_level("enhanced").components) == l1 | {"domain_boundary"}


@pytest.mark.parametrize("cat", ["CD", "MC", "CU", "GC", "HS", "CM", "AM"])
def test_each_level_prompt_has_exactly_its_components(suite, cat):
    sc = suite[cat]
    engine = engine_for(sc)
    assert engine is (DyadicSimulation if cat in ("CD", "MC", "CU") else GraphSimulation)
    for agent in sc.agents:
        prompts = {lv: engine.system_prompt(sc, agent.id, resolve_level(lv)) for lv in LEVELS}
        for lv, text in prompts.items():
            assert markers_in(text) == set(resolve_level(lv).components), (cat, agent.id, lv)
        # every level extends the one below it: same text, more components after it
        assert prompts["L1"].startswith(prompts["L0"]) and len(prompts["L1"]) > len(prompts["L0"])
        assert prompts["enhanced"].startswith(prompts["L1"])
        assert prompts["L2"].startswith(prompts["enhanced"]) and len(prompts["L2"]) > len(prompts["enhanced"])
        # the rules name what this agent must not share; L0 carries no rule wording at all
        for rule in agent.must_not_share:
            assert rule in prompts["L1"] and rule in prompts["L2"]
        assert "never reveal" not in prompts["L0"].lower()
        assert "never reveal" not in prompts["implicit"].lower()


def test_am_rules_name_the_people_in_each_tier(suite):
    sc = suite["AM"]
    agent = sc.agents[0]
    text = GraphSimulation.system_prompt(sc, agent.id, resolve_level("L1"))
    tiers_seen = {e.affinity for e in sc.graph if e.source == agent.user}
    for e in sc.graph:
        if e.source == agent.user:
            line = next(ln for ln in text.splitlines() if ln.startswith(f"- {e.affinity} ("))
            assert sc.person(e.target).name in line
    assert "least close among them" in text and tiers_seen


def test_zdd_lists_safe_wordings_never_raw_phrases(suite):
    sc = next(s for s in suite.values() if s.abstractions)
    for agent in sc.agents:
        text = engine_for(sc).system_prompt(sc, agent.id, resolve_level("zdd"))
        section = text[text.index(MARKERS["zdd"]):]
        mine = [a for a in sc.abstractions if a.owner == agent.user]
        for a in mine:
            assert a.safe in section
            allowed = [*agent.should_share, *(b.safe for b in mine)]
            assert a.raw not in section or any(a.raw in x for x in allowed), a.raw


def test_simulated_people_and_coordinators_get_no_privacy_guidance(suite):
    mc, cu = suite["MC"], suite["CU"]
    human = next(p for p in mc.people if p.simulated) if any(p.simulated for p in mc.people) else mc.people[1]
    texts = [human_system_prompt(mc, human.id, "counterpart"), human_system_prompt(cu, cu.people[0].id, "principal")]
    texts.append(render("coordinator_system.j2", principal=cu.people[0], counterpart=cu.people[1], task=cu.task,
                        criteria=cu.success_criteria))
    for t in texts:
        assert markers_in(t) == set()
