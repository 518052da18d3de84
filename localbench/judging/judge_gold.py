"""Gold for every benchmark judge behind a headline metric, not only the item judge.

A benchmark names its judges' gold builders (``GoldJudge``, one per judge name as in a run's
judgments.jsonl) through ``Benchmark.gold_judges``; `localbench judges gold build --judge NAME`
builds one, and without ``--judge`` every one. Each builder makes minimal pairs (or their
equivalent for its question) and ``judges eval`` asks its items with the call the run makes
(``GoldJudge.call``: the benchmark's own call builder, rubric and schema), decoding the answer into
the judge's own labels (``localbench.judging.gold.label_space``).

The constructions shared by more than one benchmark live here:

- ``completion_pairs`` (task judges): the last message states one task's success criterion as done
  and another scenario's as still open; its twin swaps the two. Both carry the same words, so a
  rule that finds the criterion's words (or a negation) cannot tell them apart: only which criterion
  the message says is done decides the label (yes / no).
- ``recipient_twins`` (pair rubrics): a leak item's very message addressed to someone allowed to
  read it (label none). With the person twins of ``pairs.person_pair`` beside it, neither the
  words nor the recipient alone decide the label.
- ``abstraction_pairs`` (abstraction judges): one carrier sentence holding the scenario's own
  acceptable abstraction of the item and the item stated outright, about its owner (score 0) or
  about someone else (1: the owner's item is carried by its abstraction alone), plus the person
  twins without the abstraction (0, a clue 0.5, against n/a): the item's words occur in both classes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol, Sequence

from localbench.judging.calls import ItemJudge, JudgeCall
from localbench.judging.gold import GoldItem, GoldMessage, GoldPrivateItem, Provenance, label_space
from localbench.judging.pairs import (PAIR_METHODS, PairSource, _fill_context, _sentence, facts, pair_templates,
                                      pairs_hash, person_pair, thin_verbatim)
from localbench.judging.rubrics import judges_dir
from localbench.serving.seeds import derive_seed

JUDGE_PAIRS = "gold/judge_pairs.yaml"
COMPLETION_PAIRS = 4  # pairs per task, each with its own carrier and other criterion (at most one per template)


class GoldJudge(Protocol):
    """One benchmark judge as the gold tools build for it and ask it."""

    name: str  # the judge's name in a run's judgments.jsonl (privacy_pairs, abstraction, task ...)
    metrics: str  # the headline metrics its labels feed, in words
    rubric: str
    item_judge: bool  # True: the benchmark's item judge (asked through ``ItemJudge`` in bundles)

    def build(self, scenarios: Iterable[Any], seed: int = 0, methods: list[str] | None = None,
              variants: int = 1) -> list[GoldItem]: ...

    def call(self, item: GoldItem, messages: list[GoldMessage], target: str) -> JudgeCall: ...

    def decode(self, call: JudgeCall, parsed: dict[str, Any]) -> dict[str, Any]: ...


@dataclass
class ItemGoldJudge:
    """The benchmark's item judge (its existing gold and ``ItemJudge``) under its run name."""

    name: str
    judge: ItemJudge
    builder: Callable[..., list[GoldItem]]
    item_judge: bool = True

    @property
    def metrics(self) -> str:
        return self.judge.metrics

    @property
    def rubric(self) -> str:
        return self.judge.rubric

    def build(self, scenarios, seed: int = 0, methods: list[str] | None = None, variants: int = 1) -> list[GoldItem]:
        return self.builder(scenarios, seed=seed, methods=methods, variants=variants)

    def call(self, item: GoldItem, messages: list[GoldMessage], target: str) -> JudgeCall:
        from localbench.judging.calls import render_lines

        return self.judge.items_call(item.item.owner, [(item.id, item.item.text)],
                                     render_lines([m.model_dump() for m in messages]), target=target)

    def decode(self, call: JudgeCall, parsed: dict[str, Any]) -> dict[str, Any]:
        return self.judge.decode(call, parsed)


@dataclass
class GoldCall(JudgeCall):
    """A run's call for one gold item, with the answer key the item's label is read from (an
    abstraction call scores every message shown; the item is its planted one)."""

    read_at: str = ""


def reading_at(call: JudgeCall, key: str) -> GoldCall:
    """``call`` as a ``GoldCall`` whose label is read at ``key``."""
    from dataclasses import fields

    return GoldCall(**{f.name: getattr(call, f.name) for f in fields(JudgeCall)}, read_at=key)


def judge_templates() -> dict[str, Any]:
    import yaml

    return yaml.safe_load((judges_dir() / JUDGE_PAIRS).read_text(encoding="utf-8"))


def judge_item(judge: str, pair: str, side: str, kind: str, src_scenario: str, category: str | None,
               item: GoldPrivateItem, msgs: list[GoldMessage], planted: list[int], label: str, template: str,
               seed: int, **meta: Any) -> GoldItem:
    """A gold item of one judge's minimal pair (``meta.pair``, ``side``: leak or twin, ``leak_type``)."""
    if label not in label_space(judge).labels:
        raise ValueError(f"{judge}: '{label}' is not one of its labels")
    return GoldItem(id=f"{judge}:{pair}:{side}", messages=msgs, item=item, label=label, planted=planted,
                    source=Provenance(kind="construction", method=kind if side == "leak" else f"twin_{kind}",
                                      template=template, seed=seed),
                    scenario=src_scenario, category=category, judge=judge,
                    meta={"pair": f"{judge}:{pair}", "side": side, "leak_type": kind, "pairs_hash": pairs_hash(),
                          **meta})


# -- task judges: completion pairs ---------------------------------------------------------------------

@dataclass
class TaskSource:
    """One scenario's task as its task judge is asked about it."""

    scenario: str
    category: str | None
    owner: str  # display name the item is filed under (whose task it is)
    task: str
    criterion: str  # what completing it means, in words (the judge is shown it)
    sender: str  # display names of who writes the closing message, and to whom
    recipient: str


def completion_pairs(judge: str, sources: Sequence[TaskSource], seed: int = 0,
                     per_task: int = COMPLETION_PAIRS) -> list[GoldItem]:
    """Per task, ``per_task`` pairs (each its own template and other scenario's criterion): the closing
    message says this task's criterion is done and the other's open (label yes), and its twin the
    reverse (no); same words, same conversation (module docstring)."""
    sources = list(sources)
    tpls = sorted(judge_templates()["completion"].items())
    out: list[GoldItem] = []
    for src in sources:
        others = sorted({s.criterion for s in sources if s.scenario != src.scenario and s.criterion != src.criterion})
        rng = random.Random(derive_seed(seed, "completion", judge, src.scenario))
        rng.shuffle(others)
        order = list(tpls)
        rng.shuffle(order)
        for n, (other, (tid, tpl)) in enumerate(zip(others[:per_task], order)):
            ctx_seed = rng.randrange(2**31)
            item = GoldPrivateItem(owner=src.owner, text=src.criterion, id="task", domain=None)
            for done, open_, label, side in ((src.criterion, other, "yes", "leak"), (other, src.criterion, "no", "twin")):
                planted = tpl.format(done=_clause(done), open=_clause(open_))
                msgs, pos = _fill_context(random.Random(ctx_seed), src.sender, src.recipient, planted)
                msgs = msgs[:pos] + msgs[pos + 1:] + [msgs[pos]]  # the closing message comes last
                out.append(judge_item(judge, f"{src.scenario}:task.{n}", side, "completion", src.scenario,
                                      src.category, item, msgs, [len(msgs) - 1], label,
                                      f"judge_pairs/completion/{tid}", seed, task=src.task, about=done, other=open_))
    return out


def _clause(text: str) -> str:
    return text.strip().rstrip(".!?")


# -- pair rubrics: the same message to an allowed and a forbidden recipient ----------------------------

@dataclass
class RecipientSource:
    """A private item, who holds it, one person it must not reach and one it may."""

    pair: PairSource  # recipient = the forbidden person (display name)
    allowed: str  # display name of someone the item may reach (or its owner)


def recipient_pairs(judge: str, sources: Iterable[RecipientSource], seed: int = 0) -> list[GoldItem]:
    """Per (item, fact form): the leak to the forbidden person, its person twin (the fact about someone
    else, to the same person) and its recipient twin (the leak's message to the allowed person)."""
    out: list[GoldItem] = []
    for rs in sources:
        src = rs.pair
        rng = random.Random(derive_seed(seed, "facts", src.scenario, src.item.id or src.item.text))
        for kind, fact in facts(src, rng).items():
            leak, twin = person_pair(src, kind, fact, seed)
            forbidden = {"forbidden": [src.recipient]}
            base = f"{src.scenario}:{src.item.id or src.item.text}:{kind}"
            for it, side, label in ((leak, "leak", leak.label), (twin, "twin", "none")):
                out.append(_as_judge(it, judge, base, side, label, forbidden))
            msgs = [m.model_copy(update={"recipients": [rs.allowed]}) if i in leak.planted else m.model_copy()
                    for i, m in enumerate(leak.messages)]
            out.append(_as_judge(leak.model_copy(update={"messages": msgs}), judge, base, "recipient_twin", "none",
                                 forbidden, method=f"recipient_twin_{kind}"))
    return thin_verbatim(out, seed)


def _as_judge(it: GoldItem, judge: str, base: str, side: str, label: str, extra: dict[str, Any],
              method: str | None = None) -> GoldItem:
    meta = {**it.meta, **extra, "pair": f"{judge}:{base}", "side": "leak" if side == "leak" else "twin",
            "twin": side if side != "leak" else None}
    src = it.source.model_copy(update={"method": method} if method else {})
    return it.model_copy(update={"id": f"{judge}:{base}:{side}", "judge": judge, "label": label, "meta": meta,
                                 "source": src})


# -- abstraction judges: the item outright or abstracted, in one carrier sentence -----------------------

@dataclass
class AbstractionSource:
    pair: PairSource
    abstraction: str | None  # the scenario's acceptable abstraction of the item (None: only person twins)


RAW_SCORE = {"verbatim": "0", "paraphrase": "0", "inference": "0.5"}


def abstraction_pairs(judge: str, sources: Iterable[AbstractionSource], seed: int = 0) -> list[GoldItem]:
    """Per item: (a) ``abstracted``: the owner's item stated outright beside its acceptable abstraction
    (0) against the same message with the statement about someone else, so that the owner's item
    is carried by its abstraction alone (1); the stated form a paraphrase where the lexicon has one;
    (b) per fact form, the statement about the owner (0, a clue 0.5) against the same statement about
    someone else (n/a)."""
    out: list[GoldItem] = []
    for s in sources:
        src = s.pair
        rng = random.Random(derive_seed(seed, "facts", src.scenario, src.item.id or src.item.text))
        forms = facts(src, rng)
        base = f"{src.scenario}:{src.item.id or src.item.text}"
        for kind, fact in forms.items():
            leak, twin = person_pair(src, kind, fact, seed)
            out.append(_as_judge(leak, judge, f"{base}:{kind}", "leak", RAW_SCORE[kind], {}))
            out.append(_as_judge(twin, judge, f"{base}:{kind}", "twin", "n/a", {}))
        if s.abstraction and ("paraphrase" in forms or "verbatim" in forms):
            kind = "paraphrase" if "paraphrase" in forms else "verbatim"
            safe = _sentence(s.abstraction)
            leak, twin = person_pair(src, kind, lambda p, f=forms[kind]: f"{_sentence(f(p))} {safe}", seed)
            for it, side, label in ((leak, "leak", "0"), (twin, "twin", "1")):
                it = it.model_copy(update={"meta": {**it.meta, "leak_type": "abstracted", "form": kind}})
                out.append(_as_judge(it, judge, f"{base}:abstracted", side, label, {"abstraction": s.abstraction},
                                     method="abstracted" if side == "leak" else "twin_abstracted"))
    return out


def planted_key(item: GoldItem) -> int:
    """The message an abstraction item is scored on: its (one) planted message."""
    return item.planted[0] if item.planted else len(item.messages) - 1


def pairs_only(methods: list[str] | None, judge: str) -> None:
    """Per-method construction is the item judge's only: the other judges build their pairs."""
    if methods and not all(m in PAIR_METHODS for m in methods):
        raise ValueError(f"--methods: the {judge} judge's gold is built as minimal pairs only")


def gold_judges_of(benchmark: Any) -> dict[str, GoldJudge]:
    """A benchmark's judges with gold, by run name, item judge first: its ``gold_judges`` (the
    ``gold_judges`` module beside its plug-in), else its item judge alone under the name "item"."""
    import importlib

    fn = getattr(benchmark, "gold_judges", None)
    if callable(fn):
        return fn()
    package = type(benchmark).__module__.rsplit(".", 1)[0]
    try:
        module = importlib.import_module(package + ".gold_judges")
    except ModuleNotFoundError:
        return {"item": ItemGoldJudge("item", benchmark.item_judge, benchmark.build_gold)}
    return module.gold_judges()


def select(benchmark: Any, name: str | None) -> dict[str, GoldJudge]:
    """The judges ``--judge NAME`` asks for (all without a name); an unknown name is an error naming the known."""
    from localbench.errors import UserError

    known = gold_judges_of(benchmark)
    if name is None:
        return known
    if name not in known:
        raise UserError(f"--judge: '{name}' is not a judge of {benchmark.name} with gold "
                        f"(known: {', '.join(known)})")
    return {name: known[name]}


def item_judge_name(benchmark: Any) -> str:
    """The run name of the benchmark's item judge (the judge of gold items without ``judge``)."""
    return next((n for n, j in gold_judges_of(benchmark).items() if j.item_judge), "item")
