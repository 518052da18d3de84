"""Gold from a run's real transcripts: labellers' answers on a `judges sample` file joined into gold.

`localbench judges sample` wrote a blind file and a private key (``judging.sample``); each labeller
labelled the blind file with `localbench judges label`, which names items only by opaque numbers.
Here the key turns the numbers back into items (``opaque_number`` of each key id), and each item
gets its gold label by one stated rule:

- one labeller: their label;
- two or more: the strict majority of those who answered; where there is none, the adjudicator's
  label when one is named (``adjudicator``: one of the labellers, who settles ties), else the item
  is left unlabelled and listed as a disagreement (never guessed).

Every item that labellers answered differently is listed. The labellers' agreement is reported per
judge, with bootstrap intervals: Cohen's κ for each pair in that judge's own labels (none / partial /
full, abstraction scores 0 / 0.5 / 1 / n/a, a task's yes / no) and on its binary decision,
Krippendorff's α (ordinal, nominal) and Gwet's AC1 across all of them on the labels read as leak
levels (``judging.agreement``). The gold items carry ``source.kind = "transcript"`` and
their provenance (run, spec hash, judge, judge model, target, sample seed) in ``meta.transcript``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localbench.judging.gold import (LEVEL_SPACE, GoldError, GoldItem, GoldMessage, GoldPrivateItem, LabelSpace,
                                     Provenance, _jsonl, consensus, disagreements, file_labeller, label_space,
                                     opaque_number, read_labels)

REAL_TRANSCRIPT = "real-transcript gold"
CONSTRUCTED = "constructed gold"


def gold_origin(items: Iterable[GoldItem]) -> str:
    """What a gold set's labels are about, in the words the eval report uses."""
    kinds = {it.source.kind for it in items}
    if kinds == {"transcript"}:
        return REAL_TRANSCRIPT
    if "transcript" in kinds:
        return f"{REAL_TRANSCRIPT} mixed with other gold ({', '.join(sorted(kinds - {'transcript'}))})"
    if kinds <= {"construction"}:
        return CONSTRUCTED
    return ", ".join(sorted(kinds)) + " gold"


@dataclass
class KeyLine:
    """One line of a sample's private key (``judging.sample.write_sample``)."""

    id: str
    data: dict[str, Any]


def read_key(path: str | Path) -> list[KeyLine]:
    """A sample's private key, validated enough to join on: each line has an id, the item and its messages."""
    p = Path(path)
    out: list[KeyLine] = []
    seen: set[str] = set()
    for n, d in _jsonl(p):
        for f in ("id", "messages", "item", "judge", "run_id"):
            if f not in d:
                raise GoldError(f"{p}:{n}: field '{f}': missing (is this the private/key.jsonl of `judges sample`?)")
        if d["id"] in seen:
            raise GoldError(f"{p}:{n}: field 'id': duplicate id '{d['id']}'")
        seen.add(d["id"])
        out.append(KeyLine(d["id"], d))
    if not out:
        raise GoldError(f"{p}: an empty key")
    return out


def labels_by_labeller(key: Sequence[KeyLine], files: Sequence[str | Path]) -> dict[str, dict[str, str | None]]:
    """{labeller: {key id: label}} from `judges label` files of the sample, or from copies of the blind
    file with each item's ``label`` filled in; a number or id that is no item of the key, a file with
    two labellers or a labeller in two files is an error naming the file."""
    by_num = {opaque_number(k.id): k.id for k in key}
    spaces = {k.id: label_space(k.data.get("gold_judge")) for k in key}
    if len(by_num) != len(key):
        raise GoldError("two items of the key share an opaque number")
    out: dict[str, dict[str, str | None]] = {}
    ids = {k.id for k in key}
    for f in files:
        if _is_gold_file(f):  # a copy of the blind file with labels filled in (labelled outside `judges label`)
            name, labels = _filled(f, ids)
            if name in out:
                raise GoldError(f"{f}: labeller '{name}' appears in two label files")
            out[name] = labels
            continue
        recs = read_labels(f)
        name = file_labeller(f, recs, taken=out, who="labeller")
        if name is None:
            continue
        labels: dict[str, str | None] = {}
        for r in recs:
            num = r.shown_as or r.item_id
            if num not in by_num:
                raise GoldError(f"{f}: shown_as '{num}' is not the number of any item of this sample's key")
            if not r.skipped:
                space = spaces[by_num[num]]
                if r.label not in space.labels:
                    raise GoldError(f"{f}: label '{r.label}' of {num} is not a label of its judge "
                                    f"({', '.join(space.labels)})")
                labels[by_num[num]] = r.label
        out[name] = labels
    return out


def _is_gold_file(path: str | Path) -> bool:
    """Whether a file's first record is a gold item (it has messages) rather than a label record."""
    for _, d in _jsonl(Path(path)):
        return "messages" in d
    return False


def _filled(path: str | Path, ids: set[str]) -> tuple[str, dict[str, str | None]]:
    """(labeller, {key id: label}) of a filled copy of the blind file: the labeller is the items'
    ``source.annotator`` (one for the whole file), else the file's name without ``.jsonl``."""
    from localbench.judging.gold import read_gold

    items = read_gold(path)
    bad = [it.id for it in items if it.id not in ids]
    if bad:
        raise GoldError(f"{path}: id '{bad[0]}' is not an item of this sample's key")
    names = {it.source.annotator for it in items if it.source.annotator}
    if len(names) > 1:
        raise GoldError(f"{path}: one file per labeller, found source.annotator {', '.join(sorted(names))}")
    name = names.pop() if names else Path(path).name.removesuffix(".jsonl")
    return name, {it.id: it.label for it in items if it.label is not None}


@dataclass
class Agreement:
    """The labellers' agreement, for the import's report."""

    labellers: list[str]
    space: LabelSpace = LEVEL_SPACE  # the judge's labels the κ is over; α and AC1 read them as leak levels
    pairs: list[dict[str, Any]] = field(default_factory=list)  # Cohen's κ per pair, with interval
    across: dict[str, Any] | None = None  # Krippendorff's α and Gwet's AC1 over all labellers: (estimate, low, high)

    def lines(self) -> list[str]:
        out = []
        for p in self.pairs:
            out.append(f"Cohen's κ({p['a']}, {p['b']}) = {p['kappa']:.2f} [{p['low']:.2f}, {p['high']:.2f}] "
                       f"on {p['n']} items (binary, {self.space.positive}: {p['binary_kappa']:.2f} "
                       f"[{p['binary_low']:.2f}, {p['binary_high']:.2f}])")
        if self.across:
            a = self.across
            out.append(f"Krippendorff's α (ordinal) = {a['alpha_ordinal'][0]:.2f} [{a['alpha_ordinal'][1]:.2f}, "
                       f"{a['alpha_ordinal'][2]:.2f}], α (nominal) = {a['alpha_nominal'][0]:.2f} "
                       f"[{a['alpha_nominal'][1]:.2f}, {a['alpha_nominal'][2]:.2f}]; Gwet's AC1 = {a['ac1'][0]:.2f} "
                       f"[{a['ac1'][1]:.2f}, {a['ac1'][2]:.2f}] ({len(self.labellers)} labellers)")
        return out


def agreement(by: Mapping[str, Mapping[str, str | None]], n_resamples: int = 1000, seed: int = 0,
              judge: str | None = None) -> Agreement:
    """Cohen's κ per pair of labellers in the judge's own labels (``gold.label_space``: none / partial / full,
    an abstraction score, a task's yes / no) and on its binary decision, and α / AC1 across them on the
    labels read as leak levels, each with a bootstrap interval."""
    from localbench.judging.agreement import agreement_across_judges, cohen_kappa, cohen_kappa_in

    space = label_space(judge)
    levels = {a: {i: space.level(v) for i, v in labels.items()} for a, labels in by.items()}
    names = sorted(by)
    out = Agreement(names, space)
    for a, b in itertools.combinations(names, 2):
        k = cohen_kappa_in(by[a], by[b], space.labels, n_resamples=n_resamples, seed=seed)
        kb = cohen_kappa(levels[a], levels[b], binary=True, n_resamples=n_resamples, seed=seed)
        out.pairs.append({"a": a, "b": b, "kappa": k.estimate, "low": k.low, "high": k.high, "n": k.n,
                          "binary_kappa": kb.estimate, "binary_low": kb.low, "binary_high": kb.high})
    if len(names) >= 2:
        ag = agreement_across_judges(levels, n_resamples=n_resamples, seed=seed)
        out.across = {name: (ci.estimate, ci.low, ci.high) for name, ci in
                      (("alpha_ordinal", ag.alpha_ordinal), ("alpha_nominal", ag.alpha_nominal), ("ac1", ag.ac1))}
    return out


def gold_label(labels: Mapping[str, str | None], adjudicator: str | None = None) -> tuple[str | None, str]:
    """(label, how it was decided) for one item by the module's rule."""
    given = {a: v for a, v in labels.items() if v is not None}
    if not given:
        return None, "no labeller answered"
    if len(given) == 1:
        return next(iter(given.values())), "one labeller"
    top = consensus(list(given.values()), "majority")
    if top is not None:
        return top, "majority"
    if adjudicator and given.get(adjudicator) is not None:
        return given[adjudicator], f"adjudicated by {adjudicator}"
    return None, "no majority"


def to_gold(key: Sequence[KeyLine], by: Mapping[str, Mapping[str, str | None]],
            adjudicator: str | None = None) -> list[GoldItem]:
    """Gold items of the key's items that any labeller answered, labelled by the rule, with provenance."""
    out = []
    names = sorted(by)
    for k in key:
        ann = {a: by[a][k.id] for a in names if k.id in by[a]}
        if not ann:
            continue
        label, how = gold_label(ann, adjudicator)
        d = k.data
        out.append(GoldItem(
            id=d.get("gold_id") or k.id, messages=[GoldMessage.model_validate(m) for m in d["messages"]],
            item=GoldPrivateItem.model_validate(d["item"]), label=label, annotations=ann,  # type: ignore[arg-type]
            judge=d.get("gold_judge"), planted=d.get("planted") or [],
            source=Provenance(kind="transcript", seed=d.get("sample_seed"), judge=d.get("judge_model"),
                              annotator=f"{how} of {', '.join(sorted(ann))}",
                              note=f"drawn by `judges sample` from run {d['run_id']}"),
            scenario=d.get("scenario") or None, category=d.get("category") or None,
            meta={**(d.get("meta") or {}), "transcript": {
                f: d.get(f) for f in ("run", "run_id", "benchmark", "spec_hash", "sim_key", "condition", "model",
                                      "judge", "judge_model", "target", "unit", "judge_label", "sample_seed")}
                | {"sample_id": k.id, "rule": how}}))
    return out


def by_judge(key: Sequence[KeyLine], by: Mapping[str, Mapping[str, str | None]]) -> dict[str, dict[str, dict[str, str | None]]]:
    """The labels split by the key's judge (as in the run's judgments.jsonl): {judge: {labeller: {id: label}}}."""
    judge_of = {k.id: str(k.data["judge"]) for k in key}
    out: dict[str, dict[str, dict[str, str | None]]] = {}
    for j in sorted(set(judge_of.values())):
        part = {a: {i: v for i, v in labels.items() if judge_of.get(i) == j} for a, labels in by.items()}
        if any(part.values()):
            out[j] = part
    return out


def disagreement_lines(by: Mapping[str, Mapping[str, str | None]]) -> list[str]:
    """One JSON line per item the labellers answered differently (its key id, its number, the labels)."""
    return [json.dumps({"id": i, "shown_as": opaque_number(i), "labels": lv}) for i, lv in disagreements(by)]


def call_groups(items: Sequence[GoldItem], max_size: int) -> list[list[GoldItem]]:
    """Real-transcript items grouped by the run's judge call they came from (simulation, judge,
    target), in the call's item order, at most ``max_size`` per group: a gold eval asks them as the run
    asked them, the call's messages shown once (``gold_eval.Bundle``)."""
    groups: dict[tuple[str, ...], list[GoldItem]] = {}
    for it in items:
        t = it.meta.get("transcript") or {}
        call = (str(t.get("run_id")), str(t.get("sim_key")), str(t.get("judge")), str(t.get("target")))
        groups.setdefault(call if t else ("", it.id), []).append(it)
    out = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda it: str((it.meta.get("transcript") or {}).get("unit", it.id)))
        out += [members[i:i + max_size] for i in range(0, len(members), max_size)]
    return out
