"""Run judges over a gold set: `localbench judges eval`.

Each gold item becomes the benchmark's own item-leakage judge call (same rubric, same
one-key-per-item schema: the benchmark's ``ItemJudge``, for ASB its dyadic privacy judge) and is
asked of every judge in one batched pass per judge (``run_judge_tasks``), in these variants:

- ``base``, seed 0: exactly how the benchmark asks (temperature 0);
- ``base``, seeds 1..K-1: sampled at ``temperature`` with derived seeds (self-consistency);
- ``shuffled``: the messages in another (seeded) order;
- ``padded``: neutral filler messages inserted at seeded positions (length sensitivity).

Answers go to <out>/judgments.jsonl keyed ``judge|item|variant|seed``, so an interrupted eval
resumes; a reply that fails validation is recorded as a failure, and a prompt that does not fit
the judge's context is recorded as one without being sent.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from localbench.design import DEFAULT_BENCHMARK
from localbench.files import write_atomic
from localbench.judging.calls import ItemJudge, JudgeCall, render_lines, schema_hash
from localbench.judging.construct import templates, templates_hash
from localbench.judging.gold import GoldItem, GoldMessage, gold_hash, read_gold, write_gold
from localbench.judging.runner import JudgeRunSummary, JudgeTask, answer_record, run_judge_tasks
from localbench.records import JsonlStore
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
                   "rubric_hash", "prompt_hash")
GOLD_COPY = "gold.jsonl"
JUDGMENTS = "judgments.jsonl"


@dataclass
class EvalConfig:
    """What an eval asks; recorded in <out>/eval.json so `judges report` needs nothing else."""

    judges: list[str]
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
    rubric_files: dict[str, str] = field(default_factory=dict)  # every rubric of the benchmark: path -> hash
    judge_models: dict[str, dict[str, Any]] = field(default_factory=dict)  # preset -> identity, engine facts

    @property
    def variants(self) -> list[str]:
        return ["base"] + (["shuffled"] if self.shuffle else []) + (["padded"] if self.pad else [])


def variant_messages(item: GoldItem, variant: str, seed: int = 0, pad_messages: int = 8) -> list[GoldMessage]:
    """The item's messages as shown in one variant (deterministic in the seed)."""
    msgs = [m.model_copy() for m in item.messages]
    rng = random.Random(derive_seed(seed, "variant", item.id, variant))
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


def judge_call(judge: ItemJudge, item: GoldItem, messages: list[GoldMessage] | None = None) -> JudgeCall:
    """The benchmark's item-leakage call for one gold item (one item key)."""
    shown = [m.model_dump() for m in (messages if messages is not None else item.messages)]
    call = judge.items_call(item.item.owner, [(item.id, item.item.text)], render_lines(shown), target=item.id)
    call.n_messages = len(shown)
    return call


def task_key(judge: str, item_id: str, variant: str, seed_index: int) -> str:
    return f"{judge}|{item_id}|{variant}|{seed_index}"


def planned_runs(config: EvalConfig) -> list[tuple[str, int]]:
    """(variant, seed index) pairs asked of every item: K seeds of the base, then each probe once."""
    return [("base", k) for k in range(config.seeds)] + [(v, 0) for v in config.variants if v != "base"]


def eval_tasks(judge: str, items: list[GoldItem], config: EvalConfig, store: JsonlStore,
               item_judge: ItemJudge) -> list[JudgeTask]:
    """Every (item, variant, seed) task not yet in the store.

    A prompt too long for the judge's context stays a task: ``run_judge_tasks`` records it as a
    failed judgment without sending it, and counts it in the summary's failures.
    """
    tasks = []
    for it in items:
        for variant, k in planned_runs(config):
            key = task_key(judge, it.id, variant, k)
            if key in store:
                continue
            call = judge_call(item_judge, it, variant_messages(it, variant, config.seed, config.pad_messages))
            temp = 0.0 if k == 0 else config.temperature
            meta = {"preset": judge, "item_id": it.id, "variant": variant, "seed_index": k, "temperature": temp,
                    "judge": call.judge, "rubric": call.rubric, "rubric_hash": call.rubric_hash,
                    "schema_hash": schema_hash(call.schema), "n_messages": call.n_messages}
            req = GenerationRequest(messages=call.messages, output=OutputSpec.from_schema(call.schema, name="privacy"),
                                    role="judge", max_tokens=config.max_tokens, temperature=temp,
                                    seed=derive_seed(config.seed, "gold-eval", it.id, variant, k), tag=key)
            tasks.append(JudgeTask(key=key, request=req, meta=meta,
                                   decode=lambda parsed, c=call: item_judge.decode(c, parsed)))
    return tasks


def level_of(record: dict[str, Any]) -> str | None:
    """The judged level of a gold-eval record; None for a failure (never read as "none")."""
    if record.get("failure") or not record.get("label"):
        return None
    return record["label"]["levels"].get(record["item_id"])


async def evaluate_judge(judge: str, client: StructuredClient, items: list[GoldItem], config: EvalConfig,
                         store: JsonlStore, item_judge: ItemJudge,
                         show_progress: bool | None = None) -> JudgeRunSummary:
    planned = {task_key(judge, it.id, v, k) for it in items for v, k in planned_runs(config)}
    before = len(planned & store.keys())
    tasks = eval_tasks(judge, items, config, store, item_judge)
    summary = await run_judge_tasks(client, tasks, store, show_progress=show_progress, record_of=answer_record)
    summary.total, summary.skipped = len(planned), summary.skipped + before
    return summary


def open_judge(judge: str, config: EvalConfig, out: Path) -> StructuredClient:
    """A client for one judge preset, with the eval's own response cache (<out>/cache.sqlite)."""
    from localbench.serving.session import open_cache, open_client
    from localbench.spec import EngineOptions

    serving = EngineOptions(engine=config.engine, base_url=config.base_url)  # type: ignore[arg-type]
    return open_client(judge, serving, config.base_url, open_cache(None, out), role="judge")


def write_config(out: Path, config: EvalConfig) -> None:
    """<out>/eval.json, replaced atomically."""
    write_atomic(out / CONFIG_FILE, json.dumps(asdict(config), indent=2, default=str))


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


def prepare(gold: str | Path, out: str | Path, config: EvalConfig, item_judge: ItemJudge,
            rubric_files: Sequence[Path] = ()) -> list[GoldItem]:
    """Validate the gold set, copy it into <out>, and record the config.

    A rerun into the same <out> may add judges, seeds and variants; it must ask the same gold set
    of the same benchmark's judge with the same ``ANSWER_SETTINGS``, or it is refused (UserError).
    ``rubric_files`` (the benchmark's, ``Benchmark.rubric_files()``) are hashed into eval.json as
    the run's judge stage hashes them into spec.yaml.
    """
    items = read_gold(gold)
    outp = Path(out)
    outp.mkdir(parents=True, exist_ok=True)
    config.gold, config.gold_hash = str(gold), gold_hash(gold)
    config.templates_hash = templates_hash()
    from localbench.judging.rubrics import rubric_hash

    config.rubric, config.judge_metrics = item_judge.rubric, item_judge.metrics
    config.rubric_hash = rubric_hash(config.rubric)
    config.prompt_hash = probe_hash(item_judge)
    if rubric_files:
        from localbench.judging.rubrics import judges_dir
        from localbench.rundir import file_hashes

        config.rubric_files = file_hashes(list(rubric_files), judges_dir())
    cfg_path = outp / CONFIG_FILE
    if cfg_path.exists():
        from localbench.errors import UserError

        old = json.loads(cfg_path.read_text())
        if old.get("gold_hash") != config.gold_hash:
            raise UserError(f"{out}: this eval directory holds results for another gold set "
                            f"({old.get('gold')}); use a new --out")
        if old.get("benchmark", DEFAULT_BENCHMARK) != config.benchmark:  # evals before the field: the default's
            raise UserError(f"{out}: this eval directory holds answers to the '{old.get('benchmark', 'asb')}' "
                            f"benchmark's judge, not '{config.benchmark}'; use a new --out")
        new = asdict(config)
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
    return items


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
                   show_progress: bool | None = None, rubric_files: Sequence[Path] = ()) -> dict[str, JudgeRunSummary]:
    """Every judge over every gold item, one judge (one engine) at a time; returns per-judge summaries.

    ``item_judge`` is the benchmark's (``get_benchmark(config.benchmark).item_judge``). ``clients``
    may supply ready clients by preset name (tests, or a caller that already holds an engine);
    otherwise each judge's engine is opened and closed in turn. ``rubric_files`` are the
    benchmark's (``Benchmark.rubric_files()``), hashed into eval.json with each judge's model identity.
    """
    todo = judges or config.judges
    config.judges = list(todo)
    items = prepare(gold, out, config, item_judge, rubric_files)
    store = JsonlStore(Path(out) / JUDGMENTS)
    summaries = {}
    for judge in todo:
        client = (clients or {}).get(judge) or open_judge(judge, config, Path(out))
        try:
            record_judge_model(Path(out), config, judge, client)
            summaries[judge] = await evaluate_judge(judge, client, items, config, store, item_judge, show_progress)
        finally:
            if not clients or judge not in clients:
                await client.aclose()
    return summaries


@dataclass
class EvalData:
    """A finished (or partial) eval directory, read back."""

    path: Path
    config: EvalConfig
    gold: list[GoldItem]
    records: list[dict[str, Any]] = field(default_factory=list)

    def labels(self, judge: str, variant: str = "base", seed_index: int = 0) -> dict[str, str | None]:
        """{item id: level or None} for every gold item (None = failed or not judged yet)."""
        got = {r["item_id"]: level_of(r) for r in self.records
               if r["preset"] == judge and r["variant"] == variant and r["seed_index"] == seed_index}
        return {it.id: got.get(it.id) for it in self.gold}

    def judged(self, judge: str) -> int:
        return sum(1 for r in self.records if r["preset"] == judge)

    def failures(self, judge: str, variant: str = "base", seed_index: int = 0) -> int:
        return sum(1 for r in self.records if r["preset"] == judge and r["variant"] == variant
                   and r["seed_index"] == seed_index and r.get("failure"))


def load_eval(out: str | Path) -> EvalData:
    from localbench.errors import UserError

    p = Path(out)
    cfg = p / CONFIG_FILE
    if not cfg.exists():
        raise UserError(f"{p}: not a judges eval directory (no {CONFIG_FILE}; run `localbench judges eval` first)")
    config = EvalConfig(**json.loads(cfg.read_text()))
    store = JsonlStore(p / JUDGMENTS)
    return EvalData(p, config, read_gold(p / GOLD_COPY), list(store.read()))
