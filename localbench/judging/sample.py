"""`localbench judges sample`: a stratified, blind sample of a run's real judge inputs for people to label.

A gold set built by construction measures a judge on sentences the benchmark planted; this measures
it on what it actually judged. Each benchmark rebuilds the inputs of its judge calls from a transcript
with its own call builder (``Benchmark.judge_inputs``: one ``JudgeInput`` per private item of an
item-level call, per message an abstraction call scored, per task judge call, with the judge's label
for it in that judge's own labels, ``gold.label_space``); this module draws from them and writes two files:

- ``sample.jsonl``, the blind file handed to labellers: gold items in the format `judges label` reads,
  with opaque ids, in a seeded shuffled order, no label, no run id, no simulation key, no scenario, and
  every model or preset name of the run scrubbed from the messages and the item;
- ``private/key.jsonl`` (kept apart): opaque id → run, spec hash, simulation, judge, target, the
  judge's label and the item's content, which `judges gold import --key` joins the labels with;
  ``private/sample.json`` says how the sample was drawn (strata, allocation, what was left out).

Strata are (judge, category, condition, the judge's label; ``failed`` for a failed call); allocation is
proportional (``allocate``), with at least one item for every non-empty stratum where N allows it.
A benchmark plugs a judge in by returning its calls' inputs from ``Benchmark.judge_inputs`` and
naming it in ``Benchmark.sampled_judges``.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from localbench.errors import UserError
from localbench.files import write_atomic, write_lines_atomic
from localbench.judging.gold import GoldItem, GoldMessage, GoldPrivateItem, Provenance
from localbench.serving.seeds import derive_seed

BLIND_FILE = "sample.jsonl"
PRIVATE_DIR = "private"
KEY_FILE = "key.jsonl"
MANIFEST_FILE = "sample.json"
SCRUBBED = "[model]"  # what a model or preset name in a message is replaced by
FAILED = "failed"  # the stratum label of a call the judge failed (no label; people can still label it)


@dataclass
class JudgeInput:
    """One private item of one judge call as the judge saw it, and the judge's label for it.

    A benchmark fills the call's part (``judge``, ``target``, ``unit``, ``messages``, ``item``,
    ``judge_label``, ``gold_id``); the sampler adds the simulation's (``sim_key`` ... ``model``).
    ``gold_id`` is the id the item takes in the gold set (where the benchmark's eval reads one, e.g.
    SopriBench's slot and depth); None: the opaque id. ``judge_label``: in the gold judge's labels
    (none / partial / full; an abstraction score; a task's yes / no), None when the call failed.
    """

    judge: str
    target: str
    unit: str  # the item's id within the call (an ASB item id, an AgentLeak field id, a SopriBench slot)
    messages: list[GoldMessage]
    item: GoldPrivateItem
    judge_label: str | None
    gold_id: str | None = None
    gold_judge: str | None = None  # the gold item's ``judge`` (GoldItem.judge); None: the benchmark's item judge
    planted: list[int] = field(default_factory=list)  # the message(s) the label is about (an abstraction score's)
    sim_key: str = ""
    scenario: str = ""
    category: str = ""
    condition: str = ""
    model: str = ""
    judge_model: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def stratum(self) -> tuple[str, str, str, str]:
        return (self.judge, self.category, self.condition, self.judge_label or FAILED)

    @property
    def judgment_key(self) -> str:
        return f"{self.sim_key}|{self.judge}|{self.target}"


@dataclass
class Frame:
    """Everything a run offers for sampling: the inputs, and the calls left out and why."""

    inputs: list[JudgeInput]
    left_out: dict[str, int] = field(default_factory=dict)  # reason -> calls

    def leave(self, reason: str, n: int = 1) -> None:
        if n > 0:
            self.left_out[reason] = self.left_out.get(reason, 0) + n

    def add(self, other: "Frame") -> None:
        self.inputs += other.inputs
        for k, v in other.left_out.items():
            self.leave(k, v)


SPLIT = "split to fit the judge's context (its parts are not sampled)"
NOT_REBUILT = "not rebuilt as the judge saw it (the scenario or the call builder changed since the run)"
NO_LABEL = "the judge's label does not name the item"
RULE = "labelled by rule, no model asked (nothing was shown, or a rule judge)"


def model_calls(judgments: Iterable[Any], judge: str, frame: Frame) -> Iterable[Any]:
    """The judgments of ``judge`` that a model answered whole: a rule's label and a split call's part
    are counted in ``frame`` as left out, not sampled."""
    for j in judgments:
        if j.judge != judge:
            continue
        if j.judge_model == "rule":
            frame.leave(RULE)
        elif "#" in j.target:
            frame.leave(SPLIT)
        else:
            yield j


def fits_all(messages: list[dict[str, str]]) -> bool:
    """The call builders' ``fits`` for rebuilding one call whole (split calls are left out)."""
    return True


def item_level(judgment: Any, unit: str) -> tuple[bool, str | None]:
    """(known, level) of one item in a judgment: a failed call is known with level None; a label that
    does not name the item (a call planned differently) is unknown."""
    if judgment.label is None:
        return True, None
    level = (judgment.label.get("levels") or {}).get(unit)
    return (level in ("none", "partial", "full")), level


def allocate(sizes: dict[tuple, int], n: int) -> dict[tuple, int]:
    """Items per stratum: each stratum's proportional quota ``n * size / total`` rounded down, at least one
    for every non-empty stratum when ``n`` is at least their number, never more than it holds; then
    strata furthest above their quota give one back, and those furthest below it take one more,
    until the total is ``n`` (ties by stratum order)."""
    total = sum(sizes.values())
    if n > total:
        raise UserError(f"--n {n}: the run has only {total} judge inputs to sample from")
    strata = sorted(k for k, v in sizes.items() if v > 0)
    least = 1 if n >= len(strata) else 0
    quota = {k: n * sizes[k] / total for k in strata}
    take = {k: min(sizes[k], max(least, int(quota[k]))) for k in strata}
    while sum(take.values()) > n:
        k = min((k for k in strata if take[k] > least), key=lambda k: (quota[k] - take[k], k))
        take[k] -= 1
    while sum(take.values()) < n:
        k = min((k for k in strata if take[k] < sizes[k]), key=lambda k: (take[k] - quota[k], k))
        take[k] += 1
    return take


def draw(inputs: Sequence[JudgeInput], n: int, seed: int = 0) -> tuple[list[JudgeInput], dict[tuple, tuple[int, int]]]:
    """A stratified sample of ``n`` inputs (seeded) and, per stratum, (drawn, available)."""
    strata: dict[tuple, list[JudgeInput]] = defaultdict(list)
    for x in inputs:
        strata[x.stratum].append(x)
    take = allocate({k: len(v) for k, v in strata.items()}, n)
    out: list[JudgeInput] = []
    for k in sorted(strata):
        members = sorted(strata[k], key=lambda x: (x.judgment_key, x.unit))
        out += random.Random(derive_seed(seed, "transcript-sample", *k)).sample(members, take[k])
    return out, {k: (take[k], len(strata[k])) for k in sorted(strata)}


def opaque_id(run_id: str, x: JudgeInput, seed: int) -> str:
    """An id that says nothing about the item (a hash of run, call, item and seed)."""
    h = hashlib.sha256(f"{run_id}\n{x.judgment_key}\n{x.unit}\n{seed}".encode()).hexdigest()
    return f"t{h[:12]}"


def scrubber(names: Iterable[str]):
    """A function replacing every given model or preset name (any case) in a text by ``SCRUBBED``.

    Longest names first, so a preset is scrubbed whole before a name it contains."""
    ns = sorted({n.strip() for n in names if n and n.strip()}, key=len, reverse=True)
    if not ns:
        return lambda text: text
    pattern = re.compile("|".join(re.escape(n) for n in ns), re.IGNORECASE)
    return lambda text: pattern.sub(SCRUBBED, text)


# What of an input's ``meta`` the labeller is shown, as the judge's call shows it: the recipient a pair rubric
# asks about, the abstraction judge's item list and message keys, a task judge's request, criteria and tools.
SHOWN_META = ("forbidden", "items", "keys", "task", "criteria", "tools")


def _scrubbed(v: Any, scrub) -> Any:
    return [scrub(str(p)) for p in v] if isinstance(v, list) else scrub(str(v))


def blind_item(x: JudgeInput, item_id: str, scrub) -> GoldItem:
    """The item as the labeller gets it: content scrubbed, nothing else."""
    msgs = [GoldMessage(sender=scrub(m.sender), recipients=[scrub(r) for r in m.recipients], content=scrub(m.content))
            for m in x.messages]
    item = x.item.model_copy(update={"owner": scrub(x.item.owner), "text": scrub(x.item.text)})
    meta = {k: _scrubbed(x.meta[k], scrub) for k in SHOWN_META if x.meta.get(k)}
    return GoldItem(id=item_id, messages=msgs, item=item, source=Provenance(kind="transcript"), judge=x.gold_judge,
                    planted=list(x.planted), meta=meta)


def blind_line(item: GoldItem) -> str:
    """The blind file's line: only what `judges label` needs (no defaults that could carry anything); a pair
    rubric's, an abstraction's or a task judge's item adds its judge, the message it is about (``planted``) and
    what its call shows besides the messages (``SHOWN_META``)."""
    return json.dumps(item.model_dump(mode="json", include={"id", "messages", "item", "source", "judge", "meta",
                                                            "planted"},
                                      exclude_none=True, exclude_defaults=True), ensure_ascii=False)


@dataclass
class SampleInfo:
    """How the sample was drawn (``private/sample.json``)."""

    run: str
    run_id: str
    benchmark: str
    spec_hash: str
    judge_model: str
    judges: list[str]
    n: int
    seed: int
    strata: list[dict[str, Any]]
    available: int
    left_out: dict[str, int]
    scrubbed_names: list[str]


def write_sample(out: str | Path, chosen: Sequence[JudgeInput], strata: dict[tuple, tuple[int, int]],
                 info: SampleInfo) -> tuple[Path, Path]:
    """Write the blind file and the private key; returns their paths."""
    outp = Path(out)
    scrub = scrubber(info.scrubbed_names)
    rows = [(opaque_id(info.run_id, x, info.seed), x) for x in chosen]
    if len({i for i, _ in rows}) != len(rows):
        raise UserError("two sampled items got the same opaque id; sample with another --seed")
    random.Random(derive_seed(info.seed, "transcript-sample-order")).shuffle(rows)
    blind = [blind_item(x, i, scrub) for i, x in rows]
    blind_path = write_lines_atomic(outp / BLIND_FILE, (blind_line(b) for b in blind))
    key_lines = []
    for (i, x), b in zip(rows, blind):
        key_lines.append(json.dumps({
            "id": i, "gold_id": x.gold_id, "gold_judge": x.gold_judge, "run": info.run, "run_id": info.run_id, "benchmark": info.benchmark,
            "spec_hash": info.spec_hash, "sample_seed": info.seed, "sim_key": x.sim_key, "scenario": x.scenario,
            "category": x.category, "condition": x.condition, "model": x.model, "judge": x.judge,
            "judge_model": x.judge_model, "target": x.target, "unit": x.unit, "judge_label": x.judge_label,
            "meta": {**x.meta, **b.meta}, "planted": b.planted, "messages": [m.model_dump() for m in b.messages],
            "item": b.item.model_dump()},
            ensure_ascii=False))
    key_path = write_lines_atomic(outp / PRIVATE_DIR / KEY_FILE, key_lines)
    info.strata = [{"judge": k[0], "category": k[1], "condition": k[2], "judge_label": k[3], "drawn": d,
                    "available": a} for k, (d, a) in strata.items()]
    write_atomic(outp / PRIVATE_DIR / MANIFEST_FILE, json.dumps(asdict(info), indent=1))
    return blind_path, key_path


def with_simulation(x: JudgeInput, t: Any, judge_model: str) -> JudgeInput:
    """The input with its simulation's fields (from the transcript: a planted run's judgments lack them)."""
    return replace(x, sim_key=t.key, scenario=t.scenario, category=t.category, condition=t.condition,
                   model=t.model, judge_model=judge_model)


def model_names(spec_doc: dict[str, Any], transcripts: Iterable[Any] = (), more: Iterable[str] = ()) -> list[str]:
    """Every model or preset name a run records (spec.yaml's presets and model identities, the
    transcripts' models, ``more``), with a repository name's last part too ("Qwen/Qwen3-8B" → "Qwen3-8B").
    Names under three characters are not scrubbed (they would eat ordinary words)."""
    found: set[str] = set(more)

    def walk(v: Any, key: str = "") -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, str(k))
        elif isinstance(v, list):
            for x in v:
                walk(x, key)
        elif isinstance(v, str) and key in ("preset", "source", "agent", "user_sim", "judge", "coordinator",
                                           "attacker", "model"):
            found.add(v)

    walk(spec_doc.get("resolved_models") or {})
    walk((spec_doc.get("spec") or {}).get("models") or {})
    for section in ("simulation", "judge"):
        walk(spec_doc.get(section) or {})
    for t in transcripts:
        found.add(t.model)
        found.update(t.models.values())
    out = set()
    for name in found:
        if not isinstance(name, str) or name.startswith("/"):
            continue  # a local path (a model folder) is not shown anywhere a labeller sees
        out.add(name)
        if "/" in name:
            out.add(name.rsplit("/", 1)[-1])
    return sorted(n for n in out if len(n.strip()) >= 3)
