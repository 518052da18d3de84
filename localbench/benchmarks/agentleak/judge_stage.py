"""AgentLeak's judge stage: the tier-3 judge over every channel of every trace, and TSR's semantic
judge of each trace's final answer against the scenario's success criteria (``task_judge.py``).

Tiers 1 and 2 (canaries, validated identifiers, robust value matches: ``detect.py``) need no model
and run in the score stage; a leak belongs to the lowest tier that finds it. The judge is asked
what only it can find: the natural-language facts (tier "fact": a diagnosis, a confidential note)
forbidden on a channel that the rule tiers did not already find there, which a paraphrase or an
inference can carry. One call per (trace, channel) with content, with one required key per such
field (so a field cannot be skipped), and at most as many fields as the answer budget
(``judge_max_tokens``) holds; long content is split further. Failing closed is the runner's: a
failed call is recorded as a failure, and the score stage treats its channel as unknown.
"""

from __future__ import annotations

from localbench.benchmarks.agentleak.detect import detect
from localbench.benchmarks.agentleak.judges import EVIDENCE_LEN, decode, judge_calls, rule_label
from localbench.benchmarks.agentleak.scenario import CHANNELS, Scenario, VaultField
from localbench.benchmarks.agentleak.task_judge import TASK_JUDGE, decode_task, no_answer_label, task_call, verdict_model
from localbench.judging.calls import fits_in
from localbench.judging.runner import JUDGE_TEMPERATURE, JudgeTask
from localbench.runlog import Judgment, RecordStore, Transcript
from localbench.serving.client import StructuredClient
from localbench.serving.output import OutputSpec
from localbench.serving.seeds import derive_seed
from localbench.serving.types import GenerationRequest
from localbench.spec import RunSpec

JUDGE = "leak"
FIELD_ANSWER_TOKENS = EVIDENCE_LEN // 3 + 30  # one field's verdict: quoted evidence and three enums


def judged_fields(s: Scenario, channel: str, events: list[tuple[int, str]]) -> list[VaultField]:
    """The fields the judge is asked about on a channel: forbidden facts the rule tiers did not find."""
    found = {d.field for _, text in events for d in detect(text, s, channel)}
    return [f for f in s.forbidden_on(channel) if f.tier == "fact" and f.id not in found]


def chunks(fields: list[VaultField], budget_tokens: int) -> list[list[VaultField]]:
    n = max(1, (budget_tokens - 20) // FIELD_ANSWER_TOKENS)
    return [fields[i:i + n] for i in range(0, len(fields), n)]


def channel_contents(t: Transcript) -> dict[str, list[tuple[int, str]]]:
    """Channel -> (event index, content) of every event on it that carried text."""
    out: dict[str, list[tuple[int, str]]] = {c: [] for c in CHANNELS}
    for e in t.entries:
        if e.channel in out and e.content.strip():
            out[e.channel].append((e.index, e.content))
    return out


def build_tasks(spec: RunSpec, transcripts: list[Transcript], scenarios: dict[str, Scenario],
                client: StructuredClient, store: RecordStore[Judgment]) -> list[JudgeTask]:
    fits = fits_in(client, spec.judge_max_tokens)
    tasks: list[JudgeTask] = []
    for t in transcripts:
        s = scenarios.get(t.scenario)
        if s is None:
            raise KeyError(f"transcript {t.key}: scenario '{t.scenario}' is not in {spec.scenarios}")
        if t.error:
            continue
        by_channel = channel_contents(t)
        calls = []
        values = {f.id: f.value for f in s.vault}
        for ch in CHANNELS:
            groups = chunks(judged_fields(s, ch, by_channel[ch]), spec.judge_max_tokens)
            for k, group in enumerate(groups):
                target = ch if len(groups) == 1 else f"{ch}.{k}"
                calls += judge_calls(s, ch, by_channel[ch], fits, fields=group, target=target)
        task = task_call(s, t)
        planned = {JUDGE: [c.target for c in calls], **({TASK_JUDGE: [task.target]} if task is not None else {})}
        for call in calls + ([task] if task is not None else []):
            key = f"{t.key}|{call.judge}|{call.target}"
            meta = call.record_fields(t, sim_targets=planned)
            if call.n_messages == 0:
                if key not in store:
                    label = rule_label(call) if call.judge == JUDGE else no_answer_label(call)
                    store.append(Judgment(key=key, **meta, judge_model="rule", label=label))
                continue
            if call.judge == TASK_JUDGE:
                output = OutputSpec.from_model(verdict_model(len(call.keymap)))
                read = (lambda parsed, c=call: decode_task(c, parsed))
            else:
                output = OutputSpec.from_schema(call.schema, name=JUDGE)
                read = (lambda parsed, c=call, v=values: decode(c, parsed, v))
            req = GenerationRequest(messages=call.messages, output=output,
                                    role="judge", max_tokens=spec.judge_max_tokens, temperature=JUDGE_TEMPERATURE,
                                    seed=derive_seed(spec.seed, "judge", t.key, call.target), tag=key)
            tasks.append(JudgeTask(key=key, request=req, decode=read, meta=meta))
    return tasks
