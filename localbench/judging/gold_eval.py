"""Run judges over a gold set: `localbench judges eval`.

Gold items become the benchmark's own item-leakage judge calls (same rubric, same one-key-per-item
schema: the benchmark's ``ItemJudge``, for ASB its dyadic privacy judge), asked of every judge in
one batched pass per judge (``run_judge_tasks``). By default they are asked the way a run asks
(``batch``): the items of one owner in one scenario are bundled, their conversations joined into
one transcript, and one call labels all of them, as a run's judge labels all of an owner's items
at once; bundles never hold two items about the same private item, nor an item whose planted
messages use a word of another's key fact, so no item's label depends on another's messages. With ``batch`` off each item is its own
call. Each call is asked in these variants:

- ``base``, seed 0: exactly how the benchmark asks (temperature 0);
- ``base``, seeds 1..K-1: sampled at ``temperature`` with derived seeds (self-consistency);
- ``shuffled``: the messages in another (seeded) order;
- ``padded``: neutral filler messages inserted at seeded positions (length sensitivity).

Answers go to <out>/judgments.jsonl keyed ``judge|item|variant|seed`` (``judge|bundle:ID|...`` for a
bundle, with ``item_ids``), so an interrupted eval resumes; a reply that fails validation is
recorded as a failure, and a prompt that does not fit the judge's context is recorded as one
without being sent. ``sample`` draws a stratified sample of the gold set (by construction method
and label, seeded) and asks only those items; the report then says so. Synthetic judges
(``oracle``, ``noisy:FPR,FNR``: ``localbench.judging.synthetic``) answer without a model.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from localbench.registry import DEFAULT_BENCHMARK
from localbench.files import write_atomic
from localbench.judging.calls import ItemJudge, JudgeCall, render_lines, schema_hash
from localbench.judging.construct import key_words, name_tokens, templates, templates_hash, words_of
from localbench.judging.gold import (LEVEL_SPACE, GoldItem, GoldMessage, LabelSpace, gold_hash, label_space, read_gold,
                                     write_gold)
from localbench.judging.runner import JudgeRunSummary, JudgeTask, answer_record, run_judge_tasks
from localbench.judging.synthetic import SyntheticJudge, parse_synthetic
from localbench.runlog import JsonlStore, RunFiles
from localbench.serving.client import StructuredClient
from localbench.serving.output import OutputSpec
from localbench.serving.seeds import derive_seed
from localbench.serving.types import GenerationRequest, identity_changes

VARIANTS = ("base", "shuffled", "padded")
CONFIG_FILE = "eval.json"
# Settings that change the answer stored under a key (judge|item|variant|seed index, which names none
# of them): a rerun into the same directory must match them, or old and new answers would mix.
# seeds, shuffle and pad only add or drop keys; engine and base_url say where a judge runs, not what
# it is (each judge's model identity is checked on its own).
ANSWER_SETTINGS = ("seed", "temperature", "pad_messages", "max_tokens", "templates_hash", "rubric",
                   "rubric_hash", "prompt_hash", "batch", "sample")
MAX_BUNDLE = 8  # items in one batched call at most (a run's owner rarely has more)
GOLD_COPY = "gold.jsonl"
JUDGMENTS = RunFiles.JUDGMENTS  # an eval directory names its answers as a run does


@dataclass
class EvalConfig:
    """What an eval asks; recorded in <out>/eval.json so `judges report` needs nothing else."""

    judges: list[str]
    batch: bool = True  # ask an owner's items in one call, as runs do (False: one item per call)
    sample: int = 0  # N > 0: a stratified sample of N items is asked (sample_ids), not the whole set
    sample_ids: list[str] = field(default_factory=list)
    n_gold: int = 0  # items in the gold set (the sample's population)
    seeds: int = 1  # K: seed 0 greedy, seeds 1..K-1 sampled
    shuffle: bool = False
    pad: bool = False
    pad_messages: int = 8
    temperature: float = 0.7  # for seeds >= 1
    max_tokens: int = 400  # the benchmark's judge_max_tokens default
    seed: int = 0
    engine: str = "auto"
    base_url: str | None = None
    gold: str = ""
    gold_hash: str = ""
    templates_hash: str = ""
    benchmark: str = DEFAULT_BENCHMARK  # whose item judge is asked (the plug-in's name)
    rubric: str = ""  # the item judge's rubric, recorded by prepare()
    rubric_hash: str = ""
    prompt_hash: str = ""  # the judge's whole prompt and schema for a fixed probe item (see probe_hash)
    judge_metrics: str = ""  # the benchmark metrics that judge's labels feed, for the verdicts
    bench_judge: str = ""  # the benchmark judge measured, as in a run's judgments.jsonl; "" = the item judge
    positive: str = ""  # what the judge's binary decision is (``gold.LabelSpace.positive``)
    rubric_files: dict[str, str] = field(default_factory=dict)  # every rubric of the benchmark: path -> hash
    judge_models: dict[str, dict[str, Any]] = field(default_factory=dict)  # preset -> identity, engine facts
    gold_origin: str = ""  # constructed or real-transcript gold (transcript_gold.gold_origin), recorded by prepare()

    @property
    def variants(self) -> list[str]:
        return ["base"] + (["shuffled"] if self.shuffle else []) + (["padded"] if self.pad else [])


def variant_messages(item: GoldItem, variant: str, seed: int = 0, pad_messages: int = 8) -> list[GoldMessage]:
    """The item's messages as shown in one variant (deterministic in the seed)."""
    return shown_messages(item.id, item.messages, variant, seed, pad_messages)


def shown_messages(key: str, messages: list[GoldMessage], variant: str, seed: int = 0,
                   pad_messages: int = 8) -> list[GoldMessage]:
    """Messages (of an item or a bundle, named by ``key``) as shown in one variant."""
    msgs = [m.model_copy() for m in messages]
    rng = random.Random(derive_seed(seed, "variant", key, variant))
    if variant == "base":
        return msgs
    if variant == "shuffled":
        if len(msgs) < 2:
            return msgs
        order = list(range(len(msgs)))
        while order == sorted(order):
            rng.shuffle(order)
        return [msgs[i] for i in order]
    if variant == "padded":
        people = sorted({m.sender for m in msgs} | {r for m in msgs for r in m.recipients})
        pads = list(templates()["padding"])
        for _ in range(pad_messages):
            sender = rng.choice(people)
            to = [p for p in people if p != sender][:1] or [sender]
            msgs.insert(rng.randint(0, len(msgs)), GoldMessage(sender=sender, recipients=to, content=rng.choice(pads)))
        return msgs
    raise ValueError(f"unknown variant '{variant}' (known: {', '.join(VARIANTS)})")


@dataclass
class Bundle:
    """Gold items asked in one call: one owner's, their conversations joined in order."""

    id: str
    items: list[GoldItem]

    @property
    def messages(self) -> list[GoldMessage]:
        out: list[GoldMessage] = []
        seen: list[list[GoldMessage]] = []
        for it in self.items:
            if it.messages in seen:  # items of one real judge call (transcript gold) share its messages: shown once
                continue
            seen.append(it.messages)
            out += it.messages
        return out


def _keys(item: GoldItem) -> set[str]:
    return key_words(item.item.text, set(name_tokens(item.item.owner)))


def _planted_words(item: GoldItem) -> set[str]:
    idx = item.planted or range(len(item.messages))
    return words_of(" ".join(item.messages[i].content for i in idx))


def _apart(a: GoldItem, b: GoldItem) -> bool:
    """Whether two items can share a call: neither's planted messages use a word of the other's key fact."""
    return not (_planted_words(a) & _keys(b)) and not (_planted_words(b) & _keys(a))


def bundles(items: list[GoldItem], seed: int = 0) -> list[Bundle]:
    """The items grouped as a run's judge would see them: per (scenario, owner), each bundle holding
    items about different private items, none of whose planted messages uses a word of another's
    key fact (so one item's messages say nothing about another's), at most ``MAX_BUNDLE`` of them;
    deterministic in ``seed``. Real-transcript items are bundled as the run's call asked them
    (``transcript_gold.call_groups``)."""
    from localbench.judging.transcript_gold import call_groups

    groups: dict[tuple[str, str], list[GoldItem]] = defaultdict(list)
    real = call_groups([it for it in items if it.source.kind == "transcript"], MAX_BUNDLE)
    for it in items:
        if it.source.kind == "transcript":
            continue
        groups[(it.scenario or "", it.item.owner)].append(it)
    out = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda it: it.id)
        random.Random(derive_seed(seed, "bundles", *key)).shuffle(members)
        open_: list[list[GoldItem]] = []
        for it in members:
            private = it.item.id or it.item.text
            for b in open_:
                if (len(b) < MAX_BUNDLE and all((o.item.id or o.item.text) != private for o in b)
                        and all(_apart(o, it) for o in b)):
                    b.append(it)
                    break
            else:
                open_.append([it])
        for b in open_:
            bid = hashlib.sha256("\n".join(sorted(it.id for it in b)).encode()).hexdigest()[:12]
            out.append(Bundle(bid, b))
    for b in real:
        out.append(Bundle(hashlib.sha256("\n".join(sorted(it.id for it in b)).encode()).hexdigest()[:12], b))
    return out


def judge_call(judge: ItemJudge, item: GoldItem, messages: list[GoldMessage] | None = None) -> JudgeCall:
    """The benchmark's item-leakage call for one gold item (one item key)."""
    shown = [m.model_dump() for m in (messages if messages is not None else item.messages)]
    call = judge.items_call(item.item.owner, [(item.id, item.item.text)], render_lines(shown), target=item.id)
    call.n_messages = len(shown)
    return call


def bundle_call(judge: ItemJudge, bundle: Bundle, messages: list[GoldMessage]) -> JudgeCall:
    """The benchmark's item-leakage call for a bundle: every item's key in one call, as in a run."""
    shown = [m.model_dump() for m in messages]
    call = judge.items_call(bundle.items[0].item.owner, [(it.id, it.item.text) for it in bundle.items],
                            render_lines(shown), target=f"bundle:{bundle.id}")
    call.n_messages = len(shown)
    return call


def task_key(judge: str, item_id: str, variant: str, seed_index: int) -> str:
    return f"{judge}|{item_id}|{variant}|{seed_index}"


def planned_runs(config: EvalConfig) -> list[tuple[str, int]]:
    """(variant, seed index) pairs asked of every item: K seeds of the base, then each probe once."""
    return [("base", k) for k in range(config.seeds)] + [(v, 0) for v in config.variants if v != "base"]


def units(items: list[GoldItem], config: EvalConfig) -> list[tuple[str, list[GoldItem], list[GoldMessage]]]:
    """What is asked: (key part, items, messages) per call unit — a bundle, or one item."""
    if config.batch:
        return [(f"bundle:{b.id}", b.items, b.messages) for b in bundles(items, config.seed)]
    return [(it.id, [it], it.messages) for it in items]


def eval_tasks(judge: str, items: list[GoldItem], config: EvalConfig, store: JsonlStore,
               item_judge: ItemJudge, gold_judge: Any = None) -> list[JudgeTask]:
    """Every (item or bundle, variant, seed) task not yet in the store.

    ``gold_judge`` (a ``judge_gold.GoldJudge`` other than the item judge) builds each item's call
    with the benchmark's own call builder for that judge and decodes its answer into the judge's
    labels. A prompt too long for the judge's context stays a task: ``run_judge_tasks`` records it
    as a failed judgment without sending it, and counts it in the summary's failures.
    """
    tasks = []
    for unit, members, messages in units(items, config):
        for variant, k in planned_runs(config):
            key = task_key(judge, unit, variant, k)
            if key in store:
                continue
            shown = shown_messages(unit, messages, variant, config.seed, config.pad_messages)
            if gold_judge is not None:
                call = gold_judge.call(members[0], shown, target=unit)
            elif config.batch:
                call = bundle_call(item_judge, Bundle(unit.removeprefix("bundle:"), members), shown)
            else:
                call = judge_call(item_judge, members[0], shown)
            temp = 0.0 if k == 0 else config.temperature
            meta = {"preset": judge, "item_id": None if config.batch else unit,
                    "item_ids": [it.id for it in members], "variant": variant, "seed_index": k,
                    "temperature": temp, "judge": call.judge, "rubric": call.rubric, "rubric_hash": call.rubric_hash,
                    "schema_hash": schema_hash(call.schema), "n_messages": call.n_messages}
            req = GenerationRequest(messages=call.messages,
                                    output=OutputSpec.from_schema(call.schema, name=call.judge if gold_judge else "privacy"),
                                    role="judge", max_tokens=config.max_tokens, temperature=temp,
                                    seed=derive_seed(config.seed, "gold-eval", unit, variant, k), tag=key)
            decoder = gold_judge if gold_judge is not None else item_judge
            tasks.append(JudgeTask(key=key, request=req, meta=meta,
                                   decode=lambda parsed, c=call, d=decoder: d.decode(c, parsed)))
    return tasks


def synthetic_records(judge: SyntheticJudge, items: list[GoldItem], config: EvalConfig,
                      store: JsonlStore) -> JudgeRunSummary:
    """A synthetic judge's answers (the gold label, flipped at its rates), recorded as a model's are."""
    summary = JudgeRunSummary()
    for unit, members, _ in units(items, config):
        for variant, k in planned_runs(config):
            key = task_key(judge.name, unit, variant, k)
            summary.total += 1
            if key in store:
                summary.skipped += 1
                continue
            levels = {it.id: synthetic_label(judge, it, config.seed, variant, k) for it in members}
            store.append({"key": key, "preset": judge.name, "item_id": None if config.batch else unit,
                          "item_ids": [it.id for it in members], "variant": variant, "seed_index": k,
                          "temperature": 0.0, "judge": "synthetic", "judge_model": judge.name,
                          "label": {"levels": levels, "evidence": {}}, "failure": None, "text": None, "call": None})
            summary.done += 1
    return summary


def synthetic_label(judge: SyntheticJudge, item: GoldItem, seed: int, variant: str, k: int) -> str:
    """A synthetic judge's answer in the item's judge's labels: its leak level flipped at the judge's
    rates (``LabelSpace.ordinal``), turned back into that judge's label."""
    space = label_space(item.judge)
    truth = item.label or space.labels[0]
    got = judge.level(space.ordinal[truth], seed, item.id, variant, k)
    if got == space.ordinal[truth]:
        return truth
    return next((lv for lv in space.labels if space.ordinal[lv] == got),
                next(lv for lv in space.labels if (space.ordinal[lv] == "none") == (got == "none")))


def record_items(record: dict[str, Any]) -> list[str]:
    """The gold items one eval record answers for (a bundle's, or its one item)."""
    return list(record.get("item_ids") or [record["item_id"]])


def level_of(record: dict[str, Any], item_id: str | None = None) -> str | None:
    """The judged level of one item in a gold-eval record; None for a failure (never read as "none")."""
    if record.get("failure") or not record.get("label"):
        return None
    return record["label"]["levels"].get(item_id or record["item_id"])


async def evaluate_judge(judge: str, client: StructuredClient, items: list[GoldItem], config: EvalConfig,
                         store: JsonlStore, item_judge: ItemJudge,
                         show_progress: bool | None = None, gold_judge: Any = None) -> JudgeRunSummary:
    planned = {task_key(judge, unit, v, k) for unit, _, _ in units(items, config) for v, k in planned_runs(config)}
    before = len(planned & store.keys())
    tasks = eval_tasks(judge, items, config, store, item_judge, gold_judge)
    summary = await run_judge_tasks(client, tasks, store, show_progress=show_progress, record_of=answer_record)
    summary.total, summary.skipped = len(planned), summary.skipped + before
    return summary


def open_judge(judge: str, config: EvalConfig, out: Path, cache: Path | None = None) -> StructuredClient:
    """A client for one judge preset, with the eval's own response cache (``cache``, default
    <out>/cache.sqlite)."""
    from localbench.serving.session import open_cache, open_client
    from localbench.spec import EngineOptions

    serving = EngineOptions(engine=config.engine, base_url=config.base_url)  # type: ignore[arg-type]
    return open_client(judge, serving, config.base_url, open_cache(cache, out), role="judge")


@contextmanager
def config_lock(out: Path) -> Iterator[None]:
    """Hold <out>/.eval.lock (a blocking ``flock``) while eval.json is read, merged and replaced:
    one eval per judge may share <out> (``judges eval --slurm``: one job per judge)."""
    import fcntl

    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".eval.lock", "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # dropped when the file closes (or the process dies)
        yield


class SharedStore(JsonlStore):
    """<out>/judgments.jsonl as several evals into one <out> (one job per judge) write it: opened
    (its torn last line, if any, cut) and appended to under <out>'s lock, so one job never cuts or
    interleaves with a line another is writing, on a shared filesystem too."""

    def __init__(self, path: Path, out: Path):
        self._out = out
        with config_lock(out):
            super().__init__(path)

    def append(self, record: dict[str, Any]) -> bool:
        with config_lock(self._out):
            return super().append(record)


def write_config(out: Path, config: EvalConfig) -> None:
    """<out>/eval.json, replaced atomically, keeping what other evals into <out> recorded since this
    one read it: their judges and judge models are merged in (``config`` gets them too), so two
    jobs writing at once lose neither's facts."""
    with config_lock(out):
        f = out / CONFIG_FILE
        if f.exists():
            disk = json.loads(f.read_text())
            config.judges = list(dict.fromkeys(disk.get("judges", []) + config.judges))
            config.judge_models = {**disk.get("judge_models", {}), **config.judge_models}
        write_atomic(f, json.dumps(asdict(config), indent=2, default=str))


def record_judge_model(out: Path, config: EvalConfig, judge: str, client: StructuredClient) -> None:
    """Record the judge's model identity and engine facts in eval.json (as a run's spec.yaml does).

    A judge already recorded with another identity (other weights, revision or dtype under the same
    preset name) is refused: its stored answers came from a different model.
    """
    from localbench.errors import UserError

    identity = client.backend.identity
    old = config.judge_models.get(judge, {}).get("identity")
    diff = identity_changes(old, identity) if old is not None else ""
    if diff:
        raise UserError(f"{out}: judge '{judge}' answered here as another model ({diff}); use a new --out")
    config.judge_models[judge] = {"identity": dict(identity.__dict__), "engine": client.backend.describe()}
    write_config(out, config)


def probe_hash(item_judge: ItemJudge) -> str:
    """Hash of the judge's messages and schema for one fixed probe item.

    It changes with anything that changes what the judge is shown — the rubric, the system prompt,
    the schema, the transcript format — not only with the rubric file's own hash.
    """
    probe = GoldItem.model_validate({
        "id": "probe", "item": {"owner": "Owner", "text": "a private fact"}, "label": "none",
        "messages": [{"sender": "a", "recipients": ["b"], "content": "a message"}],
        "source": {"kind": "construction"}})
    call = judge_call(item_judge, probe)
    return schema_hash({"messages": call.messages, "schema": call.schema})


def gold_judge_probe_hash(gold_judge: Any, item: GoldItem) -> str:
    """``probe_hash`` for a judge other than the item judge: its call for the set's first item."""
    call = gold_judge.call(item, item.messages, target="probe")
    return schema_hash({"messages": call.messages, "schema": call.schema})


def bench_judge_of(items: Sequence[GoldItem], where: str | Path) -> str:
    """The one benchmark judge a gold set's items ask about ("" = the item judge); a mix is an error."""
    from localbench.errors import UserError

    names = sorted({it.judge or "" for it in items})
    if len(names) > 1:
        raise UserError(f"{where}: items of several judges ({', '.join(n or 'item judge' for n in names)}); "
                        "an eval measures one judge: give one judge's gold file")
    return names[0] if names else ""


def prepare(gold: str | Path, out: str | Path, config: EvalConfig, item_judge: ItemJudge,
            rubric_files: Sequence[Path] = (), gold_judge: Any = None) -> list[GoldItem]:
    """Validate the gold set, copy it into <out>, and record the config.

    A rerun into the same <out> may add judges, seeds and variants; it must ask the same gold set
    of the same benchmark's judge with the same ``ANSWER_SETTINGS``, or it is refused (UserError).
    ``rubric_files`` (the benchmark's, ``Benchmark.rubric_files()``) are hashed into eval.json as
    the run's judge stage hashes them into spec.yaml.
    """
    items = read_gold(gold)
    from localbench.errors import UserError

    named = bench_judge_of(items, gold)
    if named and (gold_judge is None or gold_judge.name != named):
        raise UserError(f"{gold}: its items ask about the '{named}' judge"
                        + (f", not '{gold_judge.name}'" if gold_judge is not None else
                           "; ask it with that judge (`judges eval` reads the name from the file)"))
    outp = Path(out)
    outp.mkdir(parents=True, exist_ok=True)
    config.gold, config.gold_hash = str(gold), gold_hash(gold)
    config.n_gold = len(items)
    from localbench.judging.transcript_gold import gold_origin

    config.gold_origin = gold_origin(items)
    if config.sample:
        config.sample_ids = [it.id for it in stratified_sample(items, config.sample, config.seed)]
    config.templates_hash = templates_hash()
    from localbench.judging.rubrics import rubric_hash

    if gold_judge is not None and not gold_judge.item_judge:
        config.rubric, config.judge_metrics = gold_judge.rubric, gold_judge.metrics
        config.bench_judge, config.batch = gold_judge.name, False  # one item per call (docs/judges.md)
        config.prompt_hash = gold_judge_probe_hash(gold_judge, items[0])
    else:
        config.rubric, config.judge_metrics = item_judge.rubric, item_judge.metrics
        config.bench_judge = gold_judge.name if gold_judge is not None else config.bench_judge
        config.prompt_hash = probe_hash(item_judge)
    config.positive = label_space(named or None).positive
    config.rubric_hash = rubric_hash(config.rubric)
    if rubric_files:
        from localbench.judging.rubrics import judges_dir
        from localbench.runlog import file_hashes

        config.rubric_files = file_hashes(list(rubric_files), judges_dir())
    cfg_path = outp / CONFIG_FILE
    if cfg_path.exists():
        from localbench.errors import UserError

        old = json.loads(cfg_path.read_text())
        if old.get("gold_hash") != config.gold_hash:
            raise UserError(f"{out}: this eval directory holds results for another gold set "
                            f"({old.get('gold')}); use a new --out")
        if (old.get("bench_judge") or "") not in ("", config.bench_judge) and config.bench_judge:
            raise UserError(f"{out}: this eval directory measures the '{old.get('bench_judge')}' judge, not "
                            f"'{config.bench_judge}'; use a new --out")
        if old.get("benchmark", DEFAULT_BENCHMARK) != config.benchmark:  # evals before the field: the default's
            raise UserError(f"{out}: this eval directory holds answers to the '{old.get('benchmark', DEFAULT_BENCHMARK)}' "
                            f"benchmark's judge, not '{config.benchmark}'; use a new --out")
        new = asdict(config)
        old = {"batch": False, "sample": 0, **old}  # evals before these settings asked one item per call, all items
        diff = [f"{k} {old[k]!r} → {new[k]!r}" for k in _settings_in_use(old, new)
                if k in old and old[k] != new[k]]
        if diff:
            raise UserError(f"{out}: this eval directory holds answers made with other settings "
                            f"({'; '.join(diff)}); use a new --out, or rerun with the old settings")
        config.judges = list(dict.fromkeys(old.get("judges", []) + config.judges))
        config.judge_models = {**old.get("judge_models", {}), **config.judge_models}
        config.rubric_files = config.rubric_files or old.get("rubric_files", {})
    write_config(outp, config)
    write_gold(outp / GOLD_COPY, items)
    return asked(items, config)


def asked(items: list[GoldItem], config: EvalConfig) -> list[GoldItem]:
    """The items an eval asks: its sample, or the whole set."""
    if not config.sample:
        return items
    keep = set(config.sample_ids)
    return [it for it in items if it.id in keep]


def stratified_sample(items: list[GoldItem], n: int, seed: int = 0) -> list[GoldItem]:
    """``n`` labelled items drawn without replacement, each stratum (construction method or source
    kind, and label) in proportion to its size (largest remainders), seeded; in file order."""
    from localbench.errors import UserError

    pool = [it for it in items if it.label is not None]
    if n > len(pool):
        raise UserError(f"--sample {n}: the gold set has only {len(pool)} labelled items")
    strata: dict[tuple[str, str], list[GoldItem]] = defaultdict(list)
    for it in pool:
        strata[(it.source.method or it.source.kind, str(it.label))].append(it)
    quota = {k: n * len(v) / len(pool) for k, v in strata.items()}
    take = {k: int(q) for k, q in quota.items()}
    for k in sorted(quota, key=lambda k: (-(quota[k] - take[k]), k))[:n - sum(take.values())]:
        take[k] += 1
    chosen: set[str] = set()
    for k in sorted(strata):
        members = sorted(strata[k], key=lambda it: it.id)
        rng = random.Random(derive_seed(seed, "sample", *k))
        chosen |= {it.id for it in rng.sample(members, take[k])}
    return [it for it in items if it.id in chosen]


def _settings_in_use(old: dict, new: dict) -> list[str]:
    """The ``ANSWER_SETTINGS`` that shape an answer either eval asks for: ``temperature`` only
    matters once a sampled seed (seeds > 1) exists, ``pad_messages`` once padded answers do."""
    unused = set()
    if max(old.get("seeds", 1), new.get("seeds", 1)) <= 1:
        unused.add("temperature")
    if not (old.get("pad") or new.get("pad")):
        unused.add("pad_messages")
    return [k for k in ANSWER_SETTINGS if k not in unused]


async def run_eval(gold: str | Path, out: str | Path, config: EvalConfig, item_judge: ItemJudge,
                   judges: list[str] | None = None, clients: dict[str, StructuredClient] | None = None,
                   show_progress: bool | None = None, rubric_files: Sequence[Path] = (),
                   gold_judge: Any = None, cache: Path | None = None) -> dict[str, JudgeRunSummary]:
    """Every judge over every gold item, one judge (one engine) at a time; returns per-judge summaries.

    ``item_judge`` is the benchmark's (``get_benchmark(config.benchmark).item_judge``). ``clients``
    may supply ready clients by preset name (tests, or a caller that already holds an engine);
    otherwise each judge's engine is opened and closed in turn. ``rubric_files`` are the
    benchmark's (``Benchmark.rubric_files()``), hashed into eval.json with each judge's model identity.
    ``gold_judge`` (``judge_gold.GoldJudge``) names the benchmark judge measured; one other than the
    item judge is asked with its own call, one item per call (``eval_tasks``). ``cache``: the response
    cache file (default <out>/cache.sqlite; one per job when several evals share <out> on a cluster).
    """
    todo = judges or config.judges
    config.judges = list(todo)
    items = prepare(gold, out, config, item_judge, rubric_files, gold_judge)
    other = gold_judge if gold_judge is not None and not gold_judge.item_judge else None
    store = SharedStore(Path(out) / JUDGMENTS, Path(out))
    summaries = {}
    for judge in todo:
        synthetic = parse_synthetic(judge) if not (clients and judge in clients) else None
        if synthetic is not None:
            config.judge_models[judge] = {"identity": synthetic.identity, "engine": {"engine": "synthetic"}}
            write_config(Path(out), config)
            summaries[judge] = synthetic_records(synthetic, items, config, store)
            continue
        client = (clients or {}).get(judge) or open_judge(judge, config, Path(out), cache)
        try:
            record_judge_model(Path(out), config, judge, client)
            summaries[judge] = await evaluate_judge(judge, client, items, config, store, item_judge, show_progress,
                                                    other)
        finally:
            if not clients or judge not in clients:
                await client.aclose()
    return summaries


@dataclass
class EvalData:
    """A finished (or partial) eval directory, read back. ``gold`` is what the eval asks (its
    sample, or the whole set); ``n_gold`` the size of the whole set."""

    path: Path
    config: EvalConfig
    gold: list[GoldItem]
    records: list[dict[str, Any]] = field(default_factory=list)
    n_gold: int = 0
    space: LabelSpace = LEVEL_SPACE  # the measured judge's labels; ``gold`` and ``labels`` are in its level view

    def judge_labels(self, judge: str, variant: str = "base", seed_index: int = 0) -> dict[str, str | None]:
        """{item id: label or None} in the judge's own labels (None = failed or not judged yet)."""
        got: dict[str, str | None] = {}
        for r in self.records:
            if r["preset"] == judge and r["variant"] == variant and r["seed_index"] == seed_index:
                for i in record_items(r):
                    got[i] = level_of(r, i)
        return {it.id: got.get(it.id) for it in self.gold}

    def labels(self, judge: str, variant: str = "base", seed_index: int = 0) -> dict[str, str | None]:
        """{item id: level or None} for every asked gold item (None = failed or not judged yet); a judge
        with its own labels (abstraction, task) read as leak levels (``LabelSpace.ordinal``)."""
        return {i: self.space.level(v) for i, v in self.judge_labels(judge, variant, seed_index).items()}

    def judged(self, judge: str) -> int:
        return sum(1 for r in self.records if r["preset"] == judge)

    def answered(self, judge: str, variant: str = "base", seed_index: int = 0) -> set[str]:
        """The asked items this judge has a record for (an answer or a failure)."""
        ids = {it.id for it in self.gold}
        return {i for r in self.records if r["preset"] == judge and r["variant"] == variant
                and r["seed_index"] == seed_index for i in record_items(r)} & ids

    def failures(self, judge: str, variant: str = "base", seed_index: int = 0) -> int:
        """Asked items whose record is a failure."""
        ids = {it.id for it in self.gold}
        return sum(len(set(record_items(r)) & ids) for r in self.records if r["preset"] == judge
                   and r["variant"] == variant and r["seed_index"] == seed_index and r.get("failure"))


def load_eval(out: str | Path) -> EvalData:
    from localbench.errors import UserError

    p = Path(out)
    cfg = p / CONFIG_FILE
    if not cfg.exists():
        raise UserError(f"{p}: not a judges eval directory (no {CONFIG_FILE}; run `localbench judges eval` first)")
    raw = json.loads(cfg.read_text())
    raw.setdefault("batch", False)  # evals before batching asked one item per call
    config = EvalConfig(**{k: v for k, v in raw.items() if k in EvalConfig.__dataclass_fields__})
    store = JsonlStore(p / JUDGMENTS)
    items = read_gold(p / GOLD_COPY)
    space = label_space(bench_judge_of(items, p / GOLD_COPY) or None)
    return EvalData(p, config, level_view(asked(items, config)), list(store.read()), n_gold=len(items), space=space)


def level_view(items: list[GoldItem]) -> list[GoldItem]:
    """Gold items labelled as leak levels (``GoldItem.level``), the judge's own label kept in
    ``meta.judge_label``: what the agreement and reliability code reads, for every judge alike."""
    return [it if it.judge is None else
            it.model_copy(update={"label": it.level, "meta": {**it.meta, "judge_label": it.label}})
            for it in items]
