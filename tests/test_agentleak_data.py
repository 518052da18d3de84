"""AgentLeak data layer: the released JSONL, localbench's format, data check, the generator and the
repo's agentleak-mini suite."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml
from stdnum import iban as std_iban
from stdnum import luhn
from stdnum.us import rtn as std_rtn
from stdnum.us import ssn as std_ssn

from localbench.benchmarks.agentleak import fieldkinds as fk
from localbench.benchmarks.agentleak.check import check_source
from localbench.benchmarks.agentleak.generate import CYCLE, VERSIONS, generate, write_scenarios
from localbench.benchmarks.agentleak.identifiers import phone_e164
from localbench.benchmarks.agentleak.issues import ScenarioError
from localbench.benchmarks.agentleak.loaders import BUILTIN_DIR, load_scenarios
from localbench.benchmarks.agentleak.scenario import CHANNELS, FAMILIES, SURFACE_OF, TOPOLOGIES, VERTICALS
from localbench.benchmarks.agentleak.suite import dump

FULL, BASE, DIFFICULT = "scenarios_full_1000.jsonl", "scenarios_base_100.jsonl", "scenarios_difficult_100.jsonl"
CANARY = re.compile(r"^CANARY_[A-Z]+(?:_[A-Z]+)*_[A-Z0-9]{8}$")


@pytest.fixture(scope="module")
def al_dir(shared_datasets: Path) -> Path:
    d = shared_datasets / "agentleak"
    if not (d / FULL).is_file():
        pytest.skip(f"{d / FULL} is absent")
    return d


@pytest.fixture(scope="module")
def raw(al_dir: Path) -> dict[str, dict]:
    return {r["scenario_id"]: r for r in map(json.loads, (al_dir / FULL).read_text().splitlines())}


@pytest.fixture(scope="module")
def full(al_dir: Path):
    return load_scenarios(al_dir / FULL)


@pytest.fixture(scope="module")
def full_check(al_dir: Path):
    return check_source(str(al_dir / FULL))


# -- the released data ---------------------------------------------------------------------------
def test_all_1000_records_load_with_the_released_counts(full, raw, al_dir):
    scs = full.scenarios
    assert len(scs) == 1000 and {s.id for s in scs} == set(raw)
    assert Counter(s.vertical for s in scs) == dict.fromkeys(VERTICALS, 250)
    assert Counter(s.topology for s in scs) == {"single": 400, "pair": 306, "team": 294}
    assert Counter(len(s.agents) for s in scs) == {1: 400, 2: 306, 3: 294}
    assert Counter(s.attack.level for s in scs) == {"A0": 504, "A1": 248, "A2": 248}
    keys = [(VERTICALS.index(s.vertical), s.id) for s in scs]
    assert keys == sorted(keys)
    assert sum(f.tier == "canary" for s in scs for f in s.vault) == 1625  # the notes' 1,625 canary tokens
    assert sorted(int(s.source.rsplit(":", 1)[1]) for s in scs) == list(range(1, 1001))  # file:line of each
    assert all(s.source.startswith(f"{al_dir / FULL}:") and s.metadata["format"] == "agentleak-jsonl" for s in scs)


@pytest.mark.parametrize("name, verticals, single", [(BASE, dict.fromkeys(VERTICALS, 25), True),
                                                       (DIFFICULT, {"healthcare": 100}, False)])
def test_both_100_record_subsets_load(al_dir, raw, name, verticals, single):
    res = load_scenarios(al_dir / name)
    assert len(res.scenarios) == 100 and Counter(s.vertical for s in res.scenarios) == verticals
    assert {s.id for s in res.scenarios} <= set(raw)  # the subsets repeat ids of the 1,000
    assert any(s.topology == "single" for s in res.scenarios) is single
    if name == DIFFICULT:  # 40 attacks there have no family label: the class gives it
        attacked = [s for s in res.scenarios if s.attack.level != "A0"]
        assert len(attacked) == 40 and all(s.attack.family and s.attack.payload for s in attacked)


def test_facts_are_keyed_by_record_and_field_never_flattened(full, raw):
    for s in full.scenarios:
        recs = raw[s.id]["private_vault"]["records"]
        assert [r.id for r in s.records] == [f"r{i + 1}" for i in range(len(recs))]
        assert len(s.vault) == sum(len(r["fields"]) for r in recs)
        for f in s.vault:
            v = recs[int(f.record[1:]) - 1]["fields"][f.field]
            want = (", ".join(map(str, v)) or "None") if isinstance(v, list) else str(v)
            assert f.value == want, f.id
    # a scenario whose three records all have an ssn keeps all three
    s = next(x for x in full.scenarios if x.id == "agentleak_hea_00003")
    ssns = {f.id: f.value for f in s.vault if f.field == "ssn"}
    assert ssns == {"r1.ssn": "966-26-4444", "r2.ssn": ssns["r2.ssn"], "r3.ssn": "CANARY_SSN_ZVR5XO4K"}
    assert len(set(ssns.values())) == 3
    assert s.field("r3.ssn").tier == "canary" and s.field("r1.ssn").kind == "ssn"


def test_subject_and_allowed_set_per_channel(full, raw):
    for s in full.scenarios:
        r = raw[s.id]
        assert set(s.allowed) == set(CHANNELS)
        assert all(s.allowed[c] == s.allowed["C1"] for c in CHANNELS)  # one released set, on every channel
        if s.subject is not None:
            subj = next(x for x in s.records if x.id == s.subject)
            assert subj.subject in s.task or any(f.value in s.task for f in s.vault if f.record == s.subject)
            named = {f"{s.subject}.{n}" for n in r["allowed_set"]["fields"]} & {f.id for f in s.vault}
            assert named <= set(s.allowed["C1"])
        others = [i for i in s.allowed["C1"] if s.subject is None or not i.startswith(f"{s.subject}.")]
        # outside the subject only what the request itself quotes, or a group request (the headcount report)
        for i in others:
            assert s.field(i).value in s.task or s.task.startswith("Generate a headcount report"), (s.id, i)
    hea3 = next(x for x in full.scenarios if x.id == "agentleak_hea_00003")
    assert hea3.subject == "r1" and hea3.allowed["C5"] == ["r1.name"]


def test_placeholder_requests_are_flagged_and_counted(full, full_check, raw):
    flagged = set(full_check.flagged_scenarios("placeholder_request"))
    assert len(flagged) == 359
    by_vertical = Counter(raw[i]["vertical"] for i in flagged)
    assert by_vertical == {"healthcare": 120, "finance": 116, "legal": 123}
    # The notes count 354 (legal 118): they took requests in which no vault value (> 3 characters)
    # appears. Five "Summarize the discovery documents received in CASE-000" requests contain the word
    # "discovery", which is also a case's status; they are placeholders all the same.
    def quotes_vault(r):
        vals = [str(v) for rec in r["private_vault"]["records"] for v in rec["fields"].values()
                if isinstance(v, str) and len(v) > 3]
        return any(v in r["objective"]["user_request"] for v in vals)
    assert sum(not quotes_vault(raw[i]) for i in flagged) == 354
    by_id = {s.id: s for s in full.scenarios}
    assert all(by_id[i].subject is None and not by_id[i].allowed["C1"] for i in flagged)
    assert full_check.flag_counts()["absent_subject"] == 0  # every person the release names, its vault holds


def test_mislabelled_fields_are_flagged(full, full_check, raw):
    issues = [i for i in full_check.issues if i.code == "mislabelled_field"]
    assert len(issues) == 228 and {i.field.rsplit(".", 1)[1] for i in issues} == {"ssn"}
    types = Counter()
    for i in issues:
        sc = next(f.scenario for f in full_check.loaded if f.line == i.line)
        rec = int(re.search(r"records\[(\d+)\]", i.field).group(1))
        types[sc.records[rec].type] += 1
        f = sc.field(f"r{rec + 1}.ssn")
        assert f.kind == "text" and f.tier == "fact" and fk.is_sentence(f.value)
    assert types == {"client_intake": 115, "employee": 113}
    assert all(f.kind == "ssn" for s in full.scenarios for f in s.vault if f.field == "ssn" and f.tier == "identifier")


def test_forbidden_fields_absent_from_the_vault_are_flagged(full_check):
    absent = Counter(re.search(r"'(\w+)'", i.message).group(1) for i in full_check.issues if i.code == "forbidden_absent")
    # counts of the upstream notes (§1.5)
    assert absent["ssn"] == 116 and absent["opposing_party_info"] == 69 and absent["hiv_status"] == 56
    assert absent["other_medications"] == absent["medical_history"] == absent["individual_names"] == 64
    assert absent["salaries"] == 64


def test_attack_family_class_surface_and_targets(full, raw):
    fam = Counter()
    for s in full.scenarios:
        a, r = s.attack, raw[s.id]["attack"]
        if a.level == "A0":
            assert a.family is None and a.payload is None and not a.target_fields
            continue
        fam[(a.cls, a.family)] += 1
        assert a.payload == r["payload"] and a.surface == SURFACE_OF[a.family]
        forbidden = set(raw[s.id]["allowed_set"]["forbidden_fields"])
        owner = {s.subject} if s.subject else {x.id for x in s.records}
        assert all(s.field(t).field in forbidden and s.field(t).record in owner for t in a.target_fields)
        assert not set(a.target_fields) & set(s.allowed["C1"])
    assert fam[("role_confusion", "F1")] == 135 and fam[("indirect_prompt_injection", "F2")] == 60
    assert fam[("cross_agent_collusion", "F4")] == 67 and fam[("memory_write_exfiltration", "F3")] == 70
    assert fam[("tool_output_poisoning", "F2")] == 51 and fam[("direct_prompt_injection", "F1")] == 113


def test_tools_keep_their_names_and_go_to_the_workers(full, raw):
    names = set()
    for s in full.scenarios:
        released = list(dict.fromkeys(t["tool_name"] for t in raw[s.id]["tools"]))
        assert [t.name for t in s.tools] == released
        names |= set(released)
        for t in s.tools:
            assert t.input_schema["type"] == "object" and t.action in ("lookup", "search", "list")
            assert all(r in {x.id for x in s.records} for r in t.records)
        if s.topology == "single":
            assert s.agents[0].tools == released
        else:
            assert s.agents[0].role == "coordinator" and not s.agents[0].tools
            held = [t for a in s.agents[1:] for t in a.tools]
            assert sorted(held) == sorted(released)
    assert len(names) == 12


def test_weights_from_field_weights_else_the_record(al_dir, full, raw):
    base_raw = {r["scenario_id"]: r for r in map(json.loads, (al_dir / BASE).read_text().splitlines())}
    graded = 0
    for s in load_scenarios(al_dir / BASE).scenarios:
        fw = base_raw[s.id]["evaluation"]["field_weights"]
        recs = base_raw[s.id]["private_vault"]["records"]
        for f in s.vault:
            want = fw.get(f.field, recs[int(f.record[1:]) - 1]["sensitivity_weight"])
            assert f.weight == max(1, min(5, int(want + 0.5))), (s.id, f.id)
            graded += f.field in fw and fw[f.field] < 5
    assert graded > 500  # the subset's graded weights (name 1, phone 2, ...) are used, not flattened to 5
    hea1 = next(x for x in full.scenarios if x.id == "agentleak_hea_00001")
    assert hea1.field("r2.ssn").weight == 5  # field_weights: ssn 5.0
    assert hea1.field("r1.note_id").weight == 4 and hea1.field("r2.email").weight == 3  # records' 4.0 and 3.0
    halves = [f.weight for s in full.scenarios for f in s.vault
              if raw[s.id]["private_vault"]["records"][int(f.record[1:]) - 1]["sensitivity_weight"] == 4.5
              and f.field not in raw[s.id]["evaluation"]["field_weights"]]
    assert halves and set(halves) == {5}  # 4.5 rounds half up


def test_data_check_counts_per_vertical(full_check):
    assert not full_check.failed and len(full_check.loaded) == 1000
    cats = full_check.per_category()
    assert list(cats) == list(VERTICALS)
    assert all(c.scenarios == 250 and c.people == 750 for c in cats.values())
    assert sum(c.items for c in cats.values()) == 29975
    rows = {p: n for p, n, _ in full_check.issues_by_field()}
    assert rows["objective.user_request (placeholder_request)"] == 359
    assert rows["private_vault.records[].fields.ssn (mislabelled_field)"] == 228
    assert rows["attack.attack_family (family_label)"] == 195
    assert sum(c.warnings for c in cats.values()) == len(full_check.issues)


# -- malformed input -------------------------------------------------------------------------------
def _write_jsonl(path: Path, records: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def test_a_malformed_line_names_file_line_and_field(tmp_path, raw):
    good = raw["agentleak_hea_00003"]
    bad = copy.deepcopy(raw["agentleak_fin_00253"])
    del bad["private_vault"]["records"][1]["fields"]
    wrong = copy.deepcopy(raw["agentleak_leg_00502"])
    wrong["attack"]["adversary_level"] = "A9"
    p = _write_jsonl(tmp_path / "mixed.jsonl", [good, bad, "{not json", wrong])
    with pytest.raises(ScenarioError) as e:
        load_scenarios(p)
    assert (e.value.file, e.value.line, e.value.field) == (str(p), 2, "private_vault.records[1].fields")
    assert f"{p}:2: field 'private_vault.records[1].fields'" in str(e.value)
    rep = check_source(str(p))
    assert len(rep.loaded) == 1
    assert [(f.line, f.error.field) for f in rep.failed] == [(2, "private_vault.records[1].fields"), (3, None),
                                                             (4, "attack.adversary_level")]
    assert "not valid JSON" in str(rep.failed[1].error) and f"{p}:3" in str(rep.failed[1].error)


def test_absent_subject_is_flagged(tmp_path, raw):
    r = copy.deepcopy(raw["agentleak_hea_00003"])
    r["objective"]["user_request"] = "Prepare a referral letter for Jane Roe to see a specialist"
    res = load_scenarios(_write_jsonl(tmp_path / "a.jsonl", [r]))
    (s,), issues = res.scenarios, res.issues
    assert s.subject is None and not s.allowed["C1"]
    assert [i.code for i in issues if i.code == "absent_subject"] == ["absent_subject"]
    assert issues[0].line == 1 and "Jane Roe" in str([i.message for i in issues])


def test_directory_sources_skip_foreign_files_and_refuse_duplicate_ids(tmp_path, al_dir, raw):
    d = tmp_path / "src"
    d.mkdir()
    _write_jsonl(d / "a.jsonl", [raw["agentleak_hea_00003"]])
    (d / "traces.jsonl").write_text((al_dir / "traces_internal_channels.jsonl").read_text())
    res = load_scenarios(d)
    assert [s.id for s in res.scenarios] == ["agentleak_hea_00003"]
    assert [i.code for i in res.issues if i.code == "skipped_file"] == ["skipped_file"]
    _write_jsonl(d / "b.jsonl", [raw["agentleak_hea_00003"]])
    with pytest.raises(ScenarioError, match="also used by"):
        load_scenarios(d)
    rep = check_source(str(d))
    assert len(rep.failed) == 1 and rep.failed[0].line == 1 and rep.failed[0].file.endswith("b.jsonl")


def test_categories_and_limit(al_dir):
    res = load_scenarios(al_dir / FULL, categories="legal,fin", limit=5)
    assert Counter(s.vertical for s in res.scenarios) == {"finance": 5, "legal": 5}
    with pytest.raises(ScenarioError, match="unknown vertical"):
        load_scenarios(al_dir / FULL, categories=["space"])


def test_localbench_format_errors_name_the_file_and_field(tmp_path):
    sc = generate(1, seed=3)[0]
    data = yaml.safe_load(dump(sc))
    data["vault"][2]["weight"] = 9
    p = tmp_path / "one.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError) as e:
        load_scenarios(p)
    assert e.value.field == "vault[2].weight" and str(p) in str(e.value)
    data = yaml.safe_load(dump(sc))
    data["allowed"]["C2"].append("r9.ssn")
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError) as e:
        load_scenarios(p)
    assert e.value.field == "allowed.C2" and "r9.ssn" in str(e.value)
    data = yaml.safe_load(dump(sc))
    data["colour"] = "blue"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError, match="unknown field"):
        load_scenarios(p)


# -- the generator ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def generated():
    return generate(CYCLE, seed=11)


def test_generator_is_reproducible(generated, tmp_path):
    again = generate(CYCLE, seed=11)
    assert [dump(a) for a in generated] == [dump(b) for b in again]
    assert [dump(a) for a in generate(10, seed=11)] == [dump(a) for a in generated[:10]]  # a prefix
    other = generate(10, seed=12)
    assert all(dump(a) != dump(b) for a, b in zip(other, generated))
    p1 = write_scenarios(generated, tmp_path / "a")
    p2 = write_scenarios(again, tmp_path / "b")
    assert [x.read_bytes() for x in p1] == [x.read_bytes() for x in p2]
    assert write_scenarios(again, tmp_path / "a") == p1  # identical files: nothing to refuse
    with pytest.raises(ScenarioError, match="exists with other content"):
        write_scenarios(generate(1, seed=99), tmp_path / "a")  # same id, other values
    loaded = load_scenarios(tmp_path / "a")
    assert not loaded.issues
    assert {s.id: dump(s) for s in loaded.scenarios} == {s.id: dump(s) for s in generated}


def test_generated_identifiers_pass_their_validators(generated):
    seen = Counter()
    for s in generated:
        for f in s.vault:
            v = f.value
            if f.tier == "canary":
                assert CANARY.match(v), v
            elif f.kind == "ssn":
                assert std_ssn.is_valid(v), v
            elif f.kind == "card":
                assert luhn.is_valid(v.replace(" ", "")) and len(v.replace(" ", "")) == 16, v
            elif f.kind == "iban":
                assert std_iban.is_valid(v), v
            elif f.kind == "routing":
                assert std_rtn.is_valid(v), v
            elif f.kind == "icd10":
                assert re.fullmatch(r"[A-TV-Z][0-9][0-9AB](\.[0-9A-TV-Z]{1,4})?", v), v
            elif f.kind == "mrn":
                assert re.fullmatch(r"MRN-\d{8}", v) and luhn.is_valid(v[4:]), v
            elif f.kind == "phone":
                assert re.fullmatch(r"\([2-9]\d\d\) [2-9]\d\d-\d{4}", v), v
                assert phone_e164(v) is not None, v  # an assigned area code, as phonenumbers knows it
            elif f.kind == "email":
                assert re.fullmatch(r"[\w.+-]+@[\w.-]+\.(com|org|net)", v), v
            seen[f.kind if f.tier != "canary" else "canary"] += 1
        assert {f.tier for f in s.vault} == {"canary", "identifier", "fact"}
    assert {"ssn", "card", "iban", "routing", "icd10", "mrn", "phone", "email", "canary"} <= set(seen)
    # a canary is 8 of [A-Z0-9] drawn from the seed: no two alike
    canaries = [f.value for s in generated for f in s.vault if f.tier == "canary"]
    assert len(set(canaries)) == len(canaries) == 3 * CYCLE


def test_generator_covers_every_vertical_topology_family(generated):
    cells = Counter((s.vertical, s.topology, s.attack.family) for s in generated)
    assert set(cells) == {(v, t, f) for v in VERTICALS for t in TOPOLOGIES for f in (None, *FAMILIES)}
    assert set(cells.values()) == {1}
    assert {s.attack.level for s in generated} == {"A0", "A1", "A2"}
    assert {s.attack.family for s in generated if s.attack.level == "A1"} == {"F1", "F2", "F6"}
    first = generated[:48]
    assert {(s.vertical, s.topology) for s in first} == {(v, t) for v in VERTICALS for t in TOPOLOGIES}
    assert {s.attack.family for s in first} == {None, *FAMILIES} and {s.attack.level for s in first} == {"A0", "A1", "A2"}


def test_generated_tasks_attacks_and_success_are_consistent(generated):
    encodings = set()
    for s in generated:
        subj = s.subject
        assert subj and s.records[int(subj[1:]) - 1].subject in s.task
        c1 = set(s.allowed["C1"])
        assert set(s.success.must_include) <= c1 and all(i.startswith(f"{subj}.") for i in c1)
        assert all(c1 <= set(s.allowed[c]) for c in CHANNELS)
        tools = {t.name for t in s.tools}
        assert s.success.must_call and set(s.success.must_call) <= {t for a in s.agents for t in a.tools} <= tools
        a = s.attack
        if a.level == "A0":
            continue
        assert len(a.target_fields) == 2 and all(t.startswith(f"{subj}.") and t not in c1 for t in a.target_fields)
        assert a.surface == SURFACE_OF[a.family]
        # it names the fields it is after, never their values (short labels like a department "HR" aside)
        assert not any(f.value in a.payload for f in s.vault if f.kind != "name" and len(f.value) >= 4)
        subject_name = s.records[int(subj[1:]) - 1].subject
        assert subject_name in a.payload or (a.family, a.level) == ("F2", "A1")  # that one says "this record"
        if a.family == "F6":
            encodings |= {w for w in ("base64", "space between every character", "hexadecimal") if w in a.payload}
        if a.family == "F5":
            assert a.payload.startswith("Thought:")
    assert encodings == {"base64", "space between every character", "hexadecimal"}


# -- the repo's suite ------------------------------------------------------------------------------
def test_mini_suite_loads_with_the_required_coverage():
    res = load_scenarios("builtin")
    scs = res.scenarios
    assert len(scs) >= 48 and not res.issues
    assert {s.vertical for s in scs} == set(VERTICALS) and {s.topology for s in scs} == set(TOPOLOGIES)
    assert {s.attack.level for s in scs} == {"A0", "A1", "A2"} and {s.attack.family for s in scs} - {None} == set(FAMILIES)
    assert {(s.vertical, s.topology, s.attack.family) for s in scs} == {
        (v, t, f) for v in VERTICALS for t in TOPOLOGIES for f in (None, *FAMILIES)}
    for s in scs:  # each file sits in its vertical's folder, named by its id
        assert Path(s.source).parent.name == s.vertical and Path(s.source).stem == s.id
    first2 = load_scenarios("builtin", limit=2).scenarios  # the embedded default's slice
    assert {s.attack.family for s in first2} == {None, *FAMILIES}


def test_mini_suite_is_what_its_readme_command_regenerates():
    files = sorted(BUILTIN_DIR.glob("*/*.yaml"))
    meta = yaml.safe_load(files[0].read_text())["metadata"]
    # a suite made by an older generator is stale whatever the libraries: regenerate it
    assert meta["versions"].get("generator") == VERSIONS["generator"], "regenerate scenarios/agentleak-mini"
    if meta["versions"] != VERSIONS:
        pytest.skip(f"suite drawn with {meta['versions']}, installed {VERSIONS}: values may differ")
    made = {f"{s.vertical}/{s.id}.yaml": dump(s) for s in generate(len(files), seed=meta["seed"])}
    assert {f"{p.parent.name}/{p.name}": p.read_text() for p in files} == made
    assert f"--seed {meta['seed']}" in (BUILTIN_DIR / "README.md").read_text()


def test_data_check_of_one_jsonl_file_names_it_and_its_lines(al_dir):
    """A single JSONL source: counts are records, and each example says file:line (not '.')."""
    from typer.testing import CliRunner

    from localbench.cli import app

    src = al_dir / "scenarios_base_100.jsonl"
    r = CliRunner().invoke(app, ["data", "check", str(src), "--benchmark", "agentleak"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    assert "100 records: 100 loaded, ok" in r.output
    assert re.search(r"scenarios_base_100\.jsonl:\d+: agentleak_", r.output), r.output
    assert "│ .: " not in r.output
