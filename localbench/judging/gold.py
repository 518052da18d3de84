"""Gold sets for judge reliability: the item format, JSONL read/write, and merging annotators.

A gold item is what one judge call sees plus the answer it should give: the messages (sender,
recipients, content), the one private item they are judged against (owner, text, optional field
name, so AgentLeak-style vault fields fit too), the label none / partial / full, and where the
label came from (construction, a human annotator, a reference judge, an import). The format is
documented for users in judges/gold/README.md; every line is validated on read and a bad line is
reported by file, line and field.

Human labels live in separate append-only files, one per annotator (see labeller.py); ``merge``
joins them into a gold set by a stated rule and reports how far the annotators agree.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from localbench.errors import UserError
from localbench.files import write_lines_atomic

Level = Literal["none", "partial", "full"]
LEVELS: tuple[str, ...] = ("none", "partial", "full")
SourceKind = Literal["construction", "human", "judge", "import", "transcript"]  # transcript: `judges sample` + labellers
MergeRule = Literal["majority", "unanimous"]


@dataclass(frozen=True)
class LabelSpace:
    """The labels one benchmark judge gives, and how they read as leak levels.

    ``ordinal`` maps each label to none / partial / full (the three-level view the agreement and
    reliability code reads); its binary decision (partial or full against none) is the one the
    judge's headline metric counts, described in ``positive`` (e.g. "raw disclosure", "completed").
    """

    labels: tuple[str, ...]
    ordinal: dict[str, str]
    positive: str = "a leak (partial or full)"

    def level(self, label: str | None) -> str | None:
        return None if label is None else self.ordinal[label]


LEVEL_SPACE = LabelSpace(LEVELS, {lv: lv for lv in LEVELS})
# The benchmark judges' label spaces, by judge name as in a run's judgments.jsonl; a judge not named
# here (and an item without a judge: the benchmark's item judge) labels none / partial / full.
JUDGE_SPACES: dict[str, LabelSpace] = {
    # abstraction scores: 0 states the information, 0.5 softens it, 1 abstracts it, n/a does not touch it
    "abstraction": LabelSpace(("0", "0.5", "1", "n/a"), {"0": "full", "0.5": "partial", "1": "none", "n/a": "none"},
                              "raw disclosure (score 0 or 0.5)"),
    # task judges: completed (ASB's task_completed; AgentLeak: every criterion met) or not
    "task": LabelSpace(("no", "yes"), {"no": "none", "yes": "full"}, "task completed"),
}


def label_space(judge: str | None) -> LabelSpace:
    """The label space of a benchmark judge (``GoldItem.judge``); none / partial / full by default."""
    return JUDGE_SPACES.get(judge or "", LEVEL_SPACE)


class GoldError(UserError, ValueError):
    """A gold or label file that cannot be read; the message names the file, line and field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GoldMessage(_Strict):
    """One message as the judge sees it: display names for sender and recipients."""

    sender: str
    recipients: list[str] = Field(default_factory=list)
    content: str


class GoldPrivateItem(_Strict):
    """The private item the messages are judged against (an ASB item or an AgentLeak vault field)."""

    owner: str  # display name of whose information it is
    text: str
    field: str | None = None  # vault field name (e.g. "ssn"), when the source has one
    id: str | None = None  # the item's id in its source (e.g. an ASB item id)
    domain: str | None = None


class Provenance(_Strict):
    """Where a label came from and how the item was made, so any label can be traced and rebuilt."""

    kind: SourceKind
    method: str | None = None  # construction: verbatim, split, fragment, clause, abstraction, ...
    template: str | None = None  # construction: template id(s) used
    seed: int | None = None  # construction: the seed the item was drawn with
    generator: str | None = None  # preset that rewrote the planted text (label kept)
    annotator: str | None = None  # human: who labelled it (after a merge: the rule)
    judge: str | None = None  # judge: the reference judge preset
    note: str = ""


class GoldItem(_Strict):
    """One judged unit: context messages, one private item, its label and its provenance.

    ``label`` None means unlabelled (items waiting for annotators, or a reference judge that
    failed). ``planted`` lists the indices of messages that carry the item (construction only).
    ``annotations`` holds each annotator's label after a merge. ``judge`` names the benchmark judge
    whose question the item asks (as in a run's judgments.jsonl: privacy_pairs, abstraction, task
    ...); None is the benchmark's item judge. Labels are in that judge's space (``label_space``).
    """

    id: str
    messages: list[GoldMessage] = Field(min_length=1)
    item: GoldPrivateItem
    label: str | None = None
    source: Provenance
    planted: list[int] = Field(default_factory=list)
    annotations: dict[str, str | None] = Field(default_factory=dict)
    scenario: str | None = None
    category: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    judge: str | None = None

    @model_validator(mode="after")
    def _labels_in_space(self) -> "GoldItem":
        space = label_space(self.judge)
        for where, lv in (("label", self.label), *((f"annotations.{a}", v) for a, v in self.annotations.items())):
            if lv is not None and lv not in space.labels:
                raise ValueError(f"{where}: '{lv}' is not a label of the {self.judge or 'item'} judge "
                                 f"(expected one of {', '.join(space.labels)})")
        return self

    @property
    def level(self) -> str | None:
        """The label as a leak level (none / partial / full; ``LabelSpace.ordinal``)."""
        return label_space(self.judge).level(self.label)

    def as_judge_messages(self) -> list[dict[str, Any]]:
        return [m.model_dump() for m in self.messages]


class LabelRecord(_Strict):
    """One answer from one annotator (a line of a label file); ``label`` None with ``skipped``.

    Blind: the file names each item only by the opaque number the annotator saw (``shown_as``); the
    key from numbers to items is the gold file itself (``opaque_number`` of each item id), used only
    when annotators are merged (``annotator_labels``, `localbench judges gold merge`)."""

    key: str  # = shown_as ("|skip" appended for a skip), so a label file is a keyed, resumable JsonlStore
    item_id: str | None = None  # label files written before issue 31 only; never written now
    annotator: str
    label: str | None  # in the item's judge's labels (``label_space``), checked where items and labels meet
    skipped: bool = False
    time: str = ""
    shown_as: str | None = None  # the opaque number the annotator saw (never the id)
    position: int | None = None  # where in the annotator's seeded order it came

    def dump(self) -> dict[str, Any]:
        """The line written: no ``item_id`` (it names the construction method)."""
        out = self.model_dump()
        if out["item_id"] is None:
            del out["item_id"]
        return out


def opaque_number(item_id: str) -> str:
    """A number that names an item without saying anything about it (the same for every annotator,
    so two annotators can talk about an item)."""
    import hashlib

    return f"#{int(hashlib.sha256(item_id.encode()).hexdigest()[:8], 16) % 1_000_000:06d}"


# -- reading and writing ---------------------------------------------------------------------------

def _field_of(err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(x) for x in e["loc"])
    msg = str(e["msg"]).removeprefix("Value error, ")
    if not loc and ": " in msg:  # a check across fields names its field first (``GoldItem._labels_in_space``)
        loc, msg = msg.split(": ", 1)
    return f"field '{loc or '(record)'}': {msg}"


def _jsonl(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise GoldError(f"{path}: cannot read: {e.strerror}") from e
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as e:
                raise GoldError(f"{path}:{n}: not valid JSON: {e.msg}") from e
            if not isinstance(data, dict):
                raise GoldError(f"{path}:{n}: a line must be a JSON object")
            yield n, data


def read_gold(path: str | Path) -> list[GoldItem]:
    """Every item of a gold JSONL file, validated; ids must be unique."""
    p = Path(path)
    items: list[GoldItem] = []
    seen: dict[str, int] = {}
    for n, data in _jsonl(p):
        try:
            item = GoldItem.model_validate(data)
        except ValidationError as e:
            raise GoldError(f"{p}:{n}: {_field_of(e)}") from e
        if item.id in seen:
            raise GoldError(f"{p}:{n}: field 'id': duplicate id '{item.id}' (first on line {seen[item.id]})")
        bad = [i for i in item.planted if not 0 <= i < len(item.messages)]
        if bad:
            raise GoldError(f"{p}:{n}: field 'planted': index {bad[0]} is outside the {len(item.messages)} messages")
        seen[item.id] = n
        items.append(item)
    if not items:
        raise GoldError(f"{p}: no gold items")
    return items


def write_gold(path: str | Path, items: Sequence[GoldItem]) -> Path:
    """Write a gold set atomically (temp file, fsync, rename): a crash never leaves half a file."""
    return write_lines_atomic(path, (json.dumps(_dump(it), ensure_ascii=False) for it in items))


def _dump(item: GoldItem) -> dict[str, Any]:
    """An item's line; ``judge`` only when set, so an item judge's file reads as before the field."""
    out = item.model_dump(mode="json", exclude_defaults=False)
    if out.get("judge") is None:
        out.pop("judge", None)
    return out


def read_labels(path: str | Path) -> list[LabelRecord]:
    """One annotator file (as written by ``localbench judges label``); later answers win."""
    p = Path(path)
    out: dict[str, LabelRecord] = {}
    for n, data in _jsonl(p):
        try:
            rec = LabelRecord.model_validate(data)
        except ValidationError as e:
            raise GoldError(f"{p}:{n}: {_field_of(e)}") from e
        if rec.item_id is None and rec.shown_as is None:
            raise GoldError(f"{p}:{n}: field 'shown_as': missing (the number the annotator saw)")
        out[rec.item_id or rec.shown_as] = rec
    return list(out.values())


def labels_of(items: Iterable[GoldItem]) -> dict[str, str | None]:
    return {it.id: it.label for it in items}


def gold_hash(path: str | Path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


# -- merging annotators --------------------------------------------------------------------------

def consensus(labels: Sequence[str | None], rule: MergeRule = "majority") -> str | None:
    """The merged label: a strict majority (or unanimity) of the annotators who answered, else None."""
    given = [lv for lv in labels if lv is not None]
    if not given:
        return None
    (top, count), *rest = Counter(given).most_common() + [(None, 0)]
    if rule == "unanimous":
        return top if count == len(given) else None
    return top if count > rest[0][1] and count * 2 > len(given) else None


def file_labeller(path: str | Path, records: Sequence[Any], taken: Iterable[str] = (),
                  who: str = "annotator") -> str | None:
    """The one labeller of a label file (None for a file without records); two labellers in one file, or
    one already read from another file (``taken``), is an error naming the file."""
    names = {r.annotator for r in records}
    if len(names) > 1:
        raise GoldError(f"{path}: one label file per {who}, found {', '.join(sorted(names))}")
    if not names:
        return None
    name = names.pop()
    if name in taken:
        raise GoldError(f"{path}: {who} '{name}' appears in two label files")
    return name


def annotator_labels(items: Sequence[GoldItem], files: Sequence[str | Path]) -> dict[str, dict[str, str | None]]:
    """{annotator: {item id: label}} from label files; unknown numbers or ids and clashes are errors.
    The one place a label file's opaque numbers are turned back into item ids (the gold file is the key)."""
    ids = {it.id for it in items}
    judges = {it.id: it.judge for it in items}
    by_num = {opaque_number(it.id): it.id for it in items}
    out: dict[str, dict[str, str | None]] = {}
    for f in files:
        recs = read_labels(f)
        for r in recs:
            if r.item_id is not None and r.item_id not in ids:
                raise GoldError(f"{f}: item_id '{r.item_id}' is not in the gold set")
            if r.item_id is None and r.shown_as not in by_num:
                raise GoldError(f"{f}: shown_as '{r.shown_as}' is not the number of any item of the gold set")
            judge = judges[r.item_id or by_num[r.shown_as]]
            if r.label is not None and r.label not in label_space(judge).labels:
                raise GoldError(f"{f}: label '{r.label}' of {r.shown_as or r.item_id} is not a label of the "
                                f"{judge or 'item'} judge ({', '.join(label_space(judge).labels)})")
        name = file_labeller(f, recs, taken=out)
        if name is None:
            continue
        out[name] = {r.item_id or by_num[r.shown_as]: r.label for r in recs if not r.skipped}
    return out


def disagreements(by_annotator: Mapping[str, Mapping[str, str | None]]) -> list[tuple[str, dict[str, str | None]]]:
    """Items that two or more annotators labelled differently: (item id, {annotator: label})."""
    ids = sorted({i for labels in by_annotator.values() for i in labels})
    out = []
    for i in ids:
        given = {a: labels[i] for a, labels in sorted(by_annotator.items()) if labels.get(i) is not None}
        if len(set(given.values())) > 1:
            out.append((i, given))
    return out


def merge(items: Sequence[GoldItem], by_annotator: Mapping[str, Mapping[str, str | None]],
          rule: MergeRule = "majority", keep_existing: bool = False) -> list[GoldItem]:
    """Gold items labelled by the annotators' consensus; each annotator's label kept in ``annotations``.

    Items with no consensus are left unlabelled (label None) — reported, never guessed. With
    ``keep_existing`` an item's existing label (e.g. its construction label) is kept and the
    human labels are only recorded beside it, so both can be compared.
    """
    out = []
    for it in items:
        ann = {name: labels.get(it.id) for name, labels in by_annotator.items() if it.id in labels}
        merged = it.model_copy(deep=True)
        merged.annotations = {**it.annotations, **ann}
        if not keep_existing:
            merged.label = consensus(list(merged.annotations.values()), rule)
            merged.source = Provenance(kind="human", method=it.source.method, template=it.source.template,
                                       seed=it.source.seed, generator=it.source.generator,
                                       annotator=f"{rule} of {', '.join(sorted(merged.annotations))}",
                                       note=f"original label ({it.source.kind}): {it.label}")
        out.append(merged)
    return out
