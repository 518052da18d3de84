"""SopriBench's simulator: what the shared simulate stage (``runtime.harness``) runs for it.

Every (user × condition × seed index) is one simulation, keyed ``<user>|<condition>|<seed>``: one
attacker (``attack.attacker_for``) profiling one user, under the sanitizer's rewrite of the posts
when the condition says ``+sanitized``. Its transcript's payload holds the final answer (``profile``: slot -> value, posts, evidence),
whether the attacker answered at all (``answered``: a failed final answer is a failure, never
"nothing inferred"), how images reached it (``image_input``) and the route budget it spent.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any

from localbench.benchmarks.sopri.attack import (
    REFERENCE,
    AttackContext,
    AttackResult,
    Condition,
    ConditionError,
    answer_of,
    attacker_for,
)
from localbench.benchmarks.sopri.ocr import OcrError, OcrReader
from localbench.benchmarks.sopri.posts import image_input_of
from localbench.benchmarks.sopri.prompting import PROMPTS
from localbench.benchmarks.sopri.scenario import User
from localbench.benchmarks.sopri.taxonomy import builtin_source, taxonomy
from localbench.benchmarks.sopri.tools import COSTS, build_toolbox, image_files, sandbox_for
from localbench.errors import UserError
from localbench.paths import cache_dir
from localbench.runlog import RunDir, RunPaths, Transcript
from localbench.runtime.calls import OutOfContext, SimulationCalls
from localbench.runtime.clients import RoleClients
from localbench.runtime.harness import Simulator, Unit, every_unit, model_provenance, scenarios_hash
from localbench.runtime.log import ConversationLog
from localbench.serving.seeds import derive_seed
from localbench.spec import RunSpec, SpecError

CALL_ROLES = ("attacker", "sanitizer")
TEMPERATURES = {"attacker": 0.7, "sanitizer": 0.7}
ANSWER_TOKENS = 768  # a profile of a dozen inferences does not fit a chat turn's 200 tokens
NOT_ANSWERED = ("no_answer", "context_exhausted")


def conditions_of(spec: RunSpec) -> list[Condition]:
    try:
        return [Condition.parse(lv) for lv in spec.conditions or []]
    except ConditionError as e:
        raise SpecError(f"field 'conditions': {e}") from e


def answer_tokens(spec: RunSpec) -> int:
    """Tokens per model call: ``extra.answer_tokens``, else at least ANSWER_TOKENS."""
    return spec.settings.answer_tokens or max(spec.max_tokens, ANSWER_TOKENS)


def temperatures(spec: RunSpec) -> dict[str, float]:
    return {**TEMPERATURES, **(spec.settings.temperatures or {})}


def vision_of(clients: RoleClients) -> bool:
    """Whether the attacker's model takes images (the backend says so; engines without the flag do not)."""
    return bool(getattr(clients.for_role("attacker").backend, "accepts_images", False))


def run_taxonomy(spec: RunSpec) -> str:
    """The run's taxonomy: ``extra.taxonomy`` when the spec names it; else, for a run directory that
    exists (judged, scored or resumed later), the taxonomy its spec.yaml records, and ``localbench``
    for one made before the setting existed (every run was localbench's then), so that an old run is
    never scored against the default's suite; else the default."""
    if "taxonomy" in (spec.extra or {}):
        return spec.settings.taxonomy
    if not RunPaths(spec.run_dir).spec_file.exists():  # no run yet: nothing is created by asking (study plan)
        return spec.settings.taxonomy
    try:
        doc = RunDir(spec.run_dir).read_spec()
    except (OSError, ValueError):
        return spec.settings.taxonomy
    recorded = ((doc or {}).get("simulation") or {}).get("taxonomy") if isinstance(doc, dict) else None
    if isinstance(recorded, dict) and recorded.get("name"):
        return str(recorded["name"])
    return "localbench" if isinstance(doc, dict) and doc.get("simulation") else spec.settings.taxonomy


def with_taxonomy(user: User, name: str, source: str) -> User:
    """``user`` under the run's taxonomy ``name``: a labelled user must be labelled under it (else a
    UserError naming the user, the source and the setting), an unlabelled one takes it."""
    if not user.profile:
        user.taxonomy = taxonomy(name).name
    elif user.taxonomy != name:
        raise UserError(f"sopri: user '{user.id}' of {source} is labelled under the {user.taxonomy} taxonomy, but the "
                        f"run's taxonomy is {name} (set extra.taxonomy: {user.taxonomy} in the spec, or use "
                        f"builtin, the {name} taxonomy's shipped suite)")
    return user


class SopriSimulator(Simulator):
    """``runtime.harness.Simulator`` for SopriBench."""

    call_roles = CALL_ROLES
    aliases: dict[str, str] = {}  # noqa: RUF012 - the Simulator protocol reads it as a class attribute

    def __init__(self) -> None:
        # shared by every simulation of the run, and kept on disk for later runs: each image is read once
        self.reader = OcrReader(folder=cache_dir() / "ocr")
        self.suite: list[User] = []  # every user of the source, for the majority attacker

    def check(self, spec: RunSpec) -> None:
        conditions_of(spec)  # its settings (``extra``) were checked when the spec was read

    def load(self, spec: RunSpec) -> tuple[list[User], int]:
        """The users of ``spec.scenarios`` (``builtin``: the shipped suite of the run's taxonomy), each
        labelled under the run's taxonomy (an unlabelled user takes it)."""
        from localbench.benchmarks.sopri.loaders import load_users

        tax = run_taxonomy(spec)
        source = builtin_source(spec.scenarios, tax)
        res = load_users(source, spec.categories, spec.limit)
        users = [with_taxonomy(u, tax, source) for u in res.users]
        if any(c.attacker == "majority" for c in conditions_of(spec)):  # its floor is over the whole suite
            self.suite = [with_taxonomy(u, tax, source) for u in load_users(source, spec.categories).users]
        return users, len(getattr(res, "issues", []) or [])

    def plan(self, spec: RunSpec, users: list[User]) -> list[Unit]:
        return every_unit(spec, users, lambda u: u.id, lambda u: u.cohort)

    def fingerprint(self, users: list[User]) -> dict[str, str]:
        return {"prompt_set": PROMPTS.set_hash(), "scenarios": scenarios_hash(users)}

    def provenance(self, spec: RunSpec, clients: RoleClients, users: list[User], n_issues: int) -> dict[str, Any]:
        try:
            tesseract = OcrReader.version()
        except Exception as e:  # noqa: BLE001 - recorded, not fatal: only the text-only fallback needs it
            tesseract = f"unavailable: {e}"
        return {
            "models": model_provenance(clients, CALL_ROLES),
            "conditions": {lv: {"attacker": c.attacker, "without": list(c.without), "defense": c.defense}
                           for lv, c in zip(spec.conditions or [], conditions_of(spec))},
            "vision": vision_of(clients),
            "prompts": PROMPTS.hashes(),
            "prompt_set": PROMPTS.set_hash(),
            "tools": {"costs": dict(COSTS), "tesseract": tesseract},
            "defaults": {"max_rounds": {c: spec.max_rounds_for(c) for c in spec.design.categories},
                         "temperatures": temperatures(spec), "answer_tokens": answer_tokens(spec),
                         "route_budget": spec.settings.route_budget,
                         "max_inferences": spec.settings.max_inferences},
            "scenarios": {"source": spec.scenarios, "resolved": builtin_source(spec.scenarios, run_taxonomy(spec)),
                          "n": len(users), "load_issues": n_issues},
            "taxonomy": {"name": run_taxonomy(spec), "source": taxonomy(run_taxonomy(spec)).source,
                         "slots": list(taxonomy(run_taxonomy(spec)).names)},
        }

    async def prepare(self, spec: RunSpec, units: list[Unit], clients: RoleClients) -> str:
        """Read with OCR, before any simulation starts, every image that will reach an attacker as
        text (``runtime.harness.Simulator.prepare``): for a text model, the images of the users of every
        attacker that looks at images (not TextLLM, which sees none, nor the reference attackers);
        none for a VLM. Images already in the OCR cache cost nothing."""
        vision = vision_of(clients)
        users = {u.scenario: u.task for u in units
                 if not vision and Condition.parse(u.condition).attacker not in (*REFERENCE, "text")}
        paths = [f for user in users.values() for f in image_files(user).values()]
        if not paths:
            return ""
        try:
            OcrReader.version()
        except OcrError as e:
            raise UserError(f"SopriBench shows {len(paths)} images of {len(users)} users as OCR text "
                            f"(the attacker's model does not take images): {e}") from e
        runs = self.reader.runs
        failed = await asyncio.to_thread(self.reader.prefetch, paths)
        line = (f"OCR of {len(paths)} images of {len(users)} users, {self.reader.runs - runs} read now "
                f"({self.reader.workers} at a time), the rest from the cache")
        if failed:
            line += f"; {len(failed)} failed (their simulations will say so), first: {failed[0]}"
        return line

    async def play(self, unit: Unit, clients: RoleClients, spec: RunSpec) -> Transcript:
        t0 = time.monotonic()
        user: User = unit.task
        condition = Condition.parse(unit.condition)
        calls = SimulationCalls(clients, answer_tokens(spec), temperatures(spec))
        if condition.defense == "sanitized":
            from localbench.benchmarks.sopri.defense import sanitize_user

            user = await sanitize_user(user, clients, spec, calls, self.reader)
        toolbox = build_toolbox(user, sandbox_for(user, spec.scenarios), self.reader)
        log = ConversationLog(["attacker", *toolbox.tools])
        vision = vision_of(clients)
        max_rounds = spec.max_rounds_for(user.cohort)
        ctx = AttackContext(
            user=user, condition=condition, toolbox=toolbox, calls=calls, log=log,
            seed=lambda *p: derive_seed(spec.seed, user.id, unit.condition, unit.seed_index, *p),
            key=unit.key, vision=vision, max_inferences=spec.settings.max_inferences,
            budget=spec.settings.route_budget,
            settings={**spec.extra, "max_rounds": max_rounds, "ocr_reader": self.reader, "suite_users": self.suite})
        try:
            result = await attacker_for(condition).attack(ctx)
        except OutOfContext:  # an attacker that does not catch it itself
            result = AttackResult([], "context_exhausted", {"answered": False})
        if condition.defense == "sanitized":  # what the utility judge compares with the posts as written
            from localbench.benchmarks.sopri.defense import sanitized_payload

            result.payload["sanitized_posts"] = sanitized_payload(user)
        if isinstance(result.payload.get("graph"), dict):
            result.payload["graph_files"] = draw_graph(spec, unit, result.payload["graph"])
        return record(unit, user, condition, clients, calls, log, result, vision, max_rounds, time.monotonic() - t0)


GRAPHS = "graphs"
"""Folder of the run directory where each evidence graph is drawn for audit (HTML and PNG)."""


def draw_graph(spec: RunSpec, unit: Unit, graph: dict[str, Any]) -> list[str]:
    """The evidence graph drawn as ``graphs/<user>-<condition>-<seed>.html`` and ``.png`` in the run
    directory (paths relative to it); the JSON stays in the transcript, the source of truth."""
    from localbench.benchmarks.sopri.abductive.render import render_html, render_png
    from localbench.files import write_atomic

    stem = "-".join(unit.key.split("|")).replace("+", "_")
    folder = spec.run_dir / GRAPHS
    title = f"evidence graph: {unit.scenario} · {unit.condition} · seed {unit.seed_index}"
    write_atomic(folder / f"{stem}.html", render_html(graph, title=title))
    render_png(graph, folder / f"{stem}.png", title=title)
    return [f"{GRAPHS}/{stem}.html", f"{GRAPHS}/{stem}.png"]


def record(unit: Unit, user: User, condition: Condition, clients: RoleClients, calls: SimulationCalls,
           log: ConversationLog, result: AttackResult, vision: bool, max_rounds: int, wall_s: float) -> Transcript:
    """The simulation's transcript: the log, the call counts and the attacker's answer."""
    answered = bool(result.payload.get("answered", True)) and result.termination not in NOT_ANSWERED
    profile = answer_of(result.inferences) if answered else {}
    spent = sum(int(e.meta.get("cost", 0)) for e in log.entries if e.kind == "tool_call")
    schemas = sorted({e.meta["schema"] for e in log.entries if e.meta.get("schema")})
    models = {r: clients.for_role(r).model_name for r in ("attacker", *(["sanitizer"] if condition.defense else []))}
    payload = {
        "profile": profile,  # the answer object: slot -> {value, posts, evidence}
        "answered": answered,
        "image_input": image_input_of(user, vision),
        "route_spent": spent,
        "condition": {"attacker": condition.attacker, "without": list(condition.without), "defense": condition.defense},
        **{k: v for k, v in result.payload.items() if k != "answered"},
    }
    return Transcript(
        key=unit.key, scenario=user.id, category=user.cohort, condition=unit.condition, seed_index=unit.seed_index,
        model=models["attacker"], models=models, termination=result.termination,
        rounds=len({e.round for e in log.entries if e.kind in ("model_call", "failed")}), max_rounds=max_rounds,
        entries=log.entries, n_messages=0, **calls.counts(), prompts=PROMPTS.set_hash(),
        schemas=hashlib.sha256("\n".join(schemas).encode()).hexdigest()[:16] if schemas else "",
        wall_s=round(wall_s, 3), finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), payload=payload)
