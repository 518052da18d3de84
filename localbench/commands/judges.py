"""`localbench judges ...`: the judge reliability lab (gold sets, labelling, eval, rejudge, report).

    localbench judges gold build --from builtin --out gold.jsonl
    localbench judges label gold.jsonl --annotator ana
    localbench judges gold merge gold.jsonl --labels a.jsonl --labels b.jsonl --out merged.jsonl
    localbench judges eval --judges smollm2-135m,qwen3-8b --gold gold.jsonl --out judge-eval --seeds 3 --shuffle --pad
    localbench judges sample runs/asb-1234 --n 200 --out s && localbench judges label s/sample.jsonl --annotator ana
    localbench judges gold import s/sample.labels.ana.jsonl --key s/private/key.jsonl --out real-gold.jsonl
    localbench judges rejudge runs/asb-1234 --judges qwen3-8b
    localbench judges report judge-eval --run runs/asb-1234
    localbench judges plant-run --out runs/planted && localbench judges rejudge runs/planted --judge noisy:0.1,0.2

Engines and benchmarks are imported inside the commands so `--help` stays instant.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Optional

import typer

from localbench.registry import DEFAULT_BENCHMARK
from localbench.runlog import RunFiles

judges_app = typer.Typer(help="How far a judge can be trusted: gold sets, labelling, agreement, consequences.",
                         no_args_is_help=True, pretty_exceptions_enable=False)
gold_app = typer.Typer(help="Build, import and merge gold sets (JSONL; format in judges/gold/README.md).",
                       no_args_is_help=True, pretty_exceptions_enable=False)
judges_app.add_typer(gold_app, name="gold")


BENCHMARK_HELP = "the benchmark whose scenarios and judge are used"
DISAGREEMENTS_SHOWN = 20


def _csv(value: str) -> list[str]:
    from localbench.errors import UserError

    out = [v.strip() for v in value.split(",") if v.strip()]
    if not out:
        raise UserError("--judges: give at least one preset name (comma-separated)")
    return out


def _judges(csv: Optional[str], each: list[str]) -> list[str]:
    """Judges from --judges A,B and --judge X (repeatable); ``noisy:FPR,FNR`` stays whole and
    synthetic names are written one way (noisy:0.10,0.2 is noisy:0.1,0.2)."""
    from localbench.errors import UserError
    from localbench.judging.synthetic import parse_synthetic, split_judges

    names = (split_judges(csv) if csv else []) + [j.strip() for j in each if j.strip()]
    if not names:
        raise UserError("--judges / --judge: give at least one judge (a preset, oracle, or noisy:FPR,FNR)")
    return list(dict.fromkeys(syn.name if (syn := parse_synthetic(n)) else n for n in names))


JUDGES_HELP = "comma-separated judges: presets, oracle, noisy:FPR,FNR"
JUDGE_HELP = "one judge (repeatable): a preset, oracle (the truth), or noisy:FPR,FNR (the truth flipped at those rates)"


@gold_app.command("build")
def gold_build(
    source: str = typer.Option(..., "--from", help="scenarios: builtin | a directory | hf:NAME"),
    out: Path = typer.Option(..., "--out", help="gold JSONL to write"),
    seed: int = typer.Option(0, help="construction seed (same seed, same gold set)"),
    categories: Optional[str] = typer.Option(None, help="comma-separated categories (default: all)"),
    limit: Optional[int] = typer.Option(None, help="scenarios per category"),
    methods: Optional[str] = typer.Option(None, help="comma-separated methods: leak types of the minimal pairs "
                                                     "(verbatim, paraphrase, inference, or the benchmark's own), or "
                                                     "any per-method construction (a study of one method, not a "
                                                     "ranking set; default: every pair type)"),
    variants: int = typer.Option(1, min=1, help="items per (private item, method), with different templates"),
    rewrite_with: Optional[str] = typer.Option(None, "--rewrite-with",
                                               help="a generator preset that rewrites planted messages; each rewrite "
                                                    "is checked to keep the label, rejected ones are counted"),
    engine: str = typer.Option("auto", help="engine for --rewrite-with"),
    benchmark: str = typer.Option(DEFAULT_BENCHMARK, help=BENCHMARK_HELP),
    allow_weak_gold: bool = typer.Option(False, "--allow-weak-gold",
                                         help="write a set that fails the checks anyway (to study a method, never "
                                              "to rank judges); the failure is written into every item's "
                                              "meta.build.weak_gold"),
    judge: Optional[str] = typer.Option(None, "--judge",
                                        help="one benchmark judge, by its name in a run's judgments.jsonl (e.g. "
                                             "privacy_pairs, abstraction, task; an unknown name lists the "
                                             "benchmark's); default: every judge behind a headline metric, the "
                                             "item judge's set at OUT and each other's at OUT.<judge>.jsonl "
                                             "(--methods: the item judge only)"),
) -> None:
    """Gold items labelled by construction: minimal pairs (each leak beside a twin in the same words),
    checked for balanced surface cues and a cheater bank below κ 0.4; a failing set is not written
    (unless --allow-weak-gold, which marks it in its metadata). One set per benchmark judge."""
    from localbench.registry import get_benchmark
    from localbench.errors import UserError
    from localbench.judging.judge_gold import item_judge_name, select

    bm = get_benchmark(benchmark)
    asked = _csv(methods) if methods else None
    chosen = select(bm, judge if judge or not asked else item_judge_name(bm))
    try:
        scenarios = bm.load_scenarios(source, categories, limit)
    except ValueError as e:
        raise UserError(str(e)) from e
    refused = []
    for name, gj in chosen.items():
        path = out if (judge or gj.item_judge) else out.with_name(f"{out.stem}.{name}{out.suffix or '.jsonl'}")
        if len(chosen) > 1:
            typer.echo(f"== {name} judge ({gj.metrics}) → {path}")
        try:
            items = gj.build(scenarios.values(), seed=seed, methods=asked, variants=variants)
        except ValueError as e:
            raise UserError(str(e)) from e
        if not items and not gj.item_judge and len(chosen) > 1:
            typer.echo(f"{name}: these scenarios give it no gold item (nothing written)")
            continue
        try:
            _build_one(items, path, scenarios, source, seed, asked, variants, rewrite_with, engine, benchmark,
                       allow_weak_gold, name if not gj.item_judge else None)
        except UserError as e:
            if len(chosen) == 1:
                raise
            typer.echo(f"error: {e}", err=True)
            refused.append(name)
    if refused:
        raise UserError(f"{out}: not written for {', '.join(refused)} (see above); the other judges' sets were")


def _build_one(items, out: Path, scenarios, source: str, seed: int, asked, variants: int, rewrite_with, engine: str,
               benchmark: str, allow_weak_gold: bool, judge: Optional[str]) -> None:
    """Check and write one judge's gold set (the item judge's: ``judge`` None)."""
    from collections import Counter

    from localbench.errors import UserError
    from localbench.judging.construct import METHODS, construction_mix, rewrite, stamp_build
    from localbench.judging.gold import label_space, write_gold

    if not items:
        raise UserError(f"{source}: no private item could be planted (no scenarios or no items)")
    from localbench.judging.pairs import is_pair_gold

    kinds = sorted({it.meta["leak_type"] for it in items if "leak_type" in it.meta})
    info: dict = {"seed": seed, "methods": asked or (kinds if is_pair_gold(items) else list(METHODS)), "variants": variants, "source": source,
                  "benchmark": benchmark, **({"judge": judge} if judge else {})}
    if rewrite_with:
        from localbench.serving.client import StructuredClient
        from localbench.serving.engines import open_backend

        async def go():
            client = StructuredClient(open_backend(rewrite_with, engine))
            try:
                return await rewrite(items, client, seed=seed)
            finally:
                await client.aclose()

        items, rs = asyncio.run(go())
        info["rewrite"] = {"generator": rewrite_with, "asked": rs.asked, "accepted": rs.accepted,
                           "rejected": rs.rejected, "failed": rs.failed, "reasons": dict(rs.reasons)}
        typer.echo(f"rewrites by {rewrite_with}: {rs.accepted} of {rs.asked} used; {rs.rejected} rejected by the "
                   f"check that the label still holds, {rs.failed} failed (both keep the template text)")
    from localbench.judging.cues import cue_table
    from localbench.judging.goldcheck import check_gold

    check = check_gold(items)
    typer.echo("surface cues per class (leak vs none):\n" + cue_table(check.cues))
    best = {}
    for s in check.cheaters:
        if s.scope not in best or s.kappa > best[s.scope].kappa:
            best[s.scope] = s
    typer.echo("best cheater (binary κ): " + "; ".join(f"{scope} {s.cheater} {s.kappa:.2f}" for scope, s in best.items()))
    if check.hard_share is not None:
        typer.echo(f"paraphrase + inference: {check.hard_share:.0%} of the leak items")
    pairs = is_pair_gold(items)
    if not check.ok:
        for p in check.problems:
            typer.echo(f"{'warning' if allow_weak_gold else 'error'}: {p}", err=True)
        if not allow_weak_gold:
            raise UserError(f"{out}: not written: a rule that does not read the items passes this set "
                            f"({check.problems[0]}); --allow-weak-gold writes it marked as such")
        info["weak_gold"] = ("WEAK GOLD, NOT FOR RANKING JUDGES: written with --allow-weak-gold although it fails "
                             "the gold checks: " + "; ".join(check.problems))
        typer.echo("warning: written with --allow-weak-gold: a rule that does not read the items passes this set; "
                   "it is for studying one construction, not for ranking judges (meta.build.weak_gold says so)",
                   err=True)
    info["check"] = check.summary()
    info["construction"] = "minimal pairs" if pairs else "per method"
    items = stamp_build(items, info)
    write_gold(out, items)
    counts = Counter(it.label for it in items)
    typer.echo(f"{len(items)} gold items from {len(scenarios)} scenarios → {out} ("
               + ", ".join(f"{lv} {counts[lv]}" for lv in label_space(judge).labels) + ")")
    typer.echo("mix: " + ", ".join(f"{m} {n}" for m, n in construction_mix(items).items()) + f"; seed {seed}")


@gold_app.command("import")
def gold_import(
    files: list[Path] = typer.Argument(..., help="JSONL of gold items in the documented format; with --key: the "
                                                 "labellers' `judges label` files of a `judges sample` file"),
    out: Path = typer.Option(..., "--out", help="validated gold JSONL to write"),
    annotator: Optional[str] = typer.Option(None, help="record this annotator as the source of every label"),
    key: Optional[Path] = typer.Option(None, "--key", help="the sample's private/key.jsonl (`judges sample`): "
                                                           "join the labellers' files into real-transcript gold"),
    adjudicator: Optional[str] = typer.Option(None, "--adjudicator",
                                              help="with --key: the labeller whose label settles items without a "
                                                   "majority (default: such items stay unlabelled)"),
    resamples: int = typer.Option(1000, help="with --key: bootstrap resamples of the agreement intervals"),
) -> None:
    """Validate gold items labelled elsewhere (e.g. by people) and write them as a gold set; with --key,
    turn labellers' answers on a `judges sample` file into real-transcript gold and report their agreement."""
    from localbench.errors import UserError
    from localbench.judging.gold import Provenance, read_gold, write_gold

    if key is not None:
        _transcript_gold(files, key, out, adjudicator, resamples)
        return
    if adjudicator:
        raise UserError("--adjudicator: only with --key (labellers of a `judges sample` file)")
    if len(files) != 1:
        raise UserError(f"gold import: one gold file without --key, got {len(files)}")
    file = files[0]
    items = read_gold(file)
    if annotator:
        items = [it.model_copy(update={"source": Provenance(kind="human", annotator=annotator,
                                                            method=it.source.method, note=f"imported from {file}")})
                 for it in items]
    write_gold(out, items)
    typer.echo(f"{len(items)} items ({sum(it.label is not None for it in items)} labelled) → {out}")


def _transcript_gold(files: list[Path], key: Path, out: Path, adjudicator: Optional[str], resamples: int) -> None:
    """`gold import --key`: labellers' files + the sample's key → gold, agreement reported (judging.transcript_gold)."""
    from collections import Counter

    from localbench.errors import UserError
    from localbench.files import write_atomic, write_lines_atomic
    from localbench.judging.gold import write_gold
    from localbench.judging.transcript_gold import (agreement, by_judge, disagreement_lines, labels_by_labeller,
                                                    read_key, to_gold)

    lines = read_key(key)
    by = labels_by_labeller(lines, files)
    if not by:
        raise UserError(f"{', '.join(map(str, files))}: no labels")
    if adjudicator and adjudicator not in by:
        raise UserError(f"--adjudicator: '{adjudicator}' is not one of the labellers ({', '.join(sorted(by))})")
    items = to_gold(lines, by, adjudicator)
    judges = sorted({it.meta["transcript"]["judge"] for it in items})
    paths = {j: out if len(judges) == 1 else out.with_name(f"{out.stem}.{j}{out.suffix}") for j in judges}
    for j, path in paths.items():  # one gold file per judge: an eval measures one judge (--gold repeated)
        write_gold(path, [it for it in items if it.meta["transcript"]["judge"] == j])
    rules = Counter(it.meta["transcript"]["rule"] for it in items)
    typer.echo(f"{len(items)} real-transcript gold items, {sum(it.label is not None for it in items)} labelled → "
               f"{', '.join(f'{p} ({j})' for j, p in paths.items())}"
               f" ({', '.join(f'{v} by {k}' for k, v in sorted(rules.items()))}; {len(lines) - len(items)} of the "
               f"sample's {len(lines)} items answered by nobody, left out)")
    for a in sorted(by):
        typer.echo(f"  {a}: {sum(v is not None for v in by[a].values())} labels")
    info: dict = {"labellers": sorted(by), "key": str(key), "files": [str(f) for f in files],
                  "gold": {j: str(p) for j, p in paths.items()},
                  "rule": "one labeller: theirs; more: strict majority, else "
                          + (f"adjudicator {adjudicator}" if adjudicator else "unlabelled"),
                  "items": len(items), "labelled": sum(it.label is not None for it in items)}
    if len(by) >= 2:
        parts = by_judge(lines, by)
        info["agreement_by_judge"] = {}
        for j, part in parts.items():  # κ in each judge's own labels (abstraction 0/0.5/1/n/a, task yes/no)
            part = {a: labels for a, labels in part.items() if labels}
            if len(part) < 2:
                typer.echo(f"  {j}: one labeller, no agreement to report")
                continue
            ag = agreement(part, n_resamples=resamples, judge=j)
            if len(parts) > 1:
                typer.echo(f"  {j} ({', '.join(ag.space.labels)}):")
            for line in ag.lines():
                typer.echo(("    " if len(parts) > 1 else "  ") + line)
            info["agreement_by_judge"][j] = {"labels": list(ag.space.labels), "pairs": ag.pairs, "across": ag.across}
            if len(parts) == 1:
                info["agreement"] = {"pairs": ag.pairs, "across": ag.across}
        diff = disagreement_lines(by)
        path = out.with_name(out.name + ".disagreements.jsonl")
        write_lines_atomic(path, diff)
        typer.echo(f"  {len(diff)} items labelled differently → {path}")
        info["disagreements"] = len(diff)
    else:
        typer.echo("  one labeller: no agreement to report (their labels are the gold)")
    import json

    write_atomic(out.with_name(out.name + ".agreement.json"), json.dumps(info, indent=1))


@gold_app.command("merge")
def gold_merge(
    gold: Path = typer.Argument(..., help="the gold set the annotators labelled"),
    labels: list[Path] = typer.Option(..., "--labels", help="one label file per annotator (repeat)"),
    out: Path = typer.Option(..., "--out", help="merged gold JSONL to write"),
    rule: str = typer.Option("majority", help="majority | unanimous; items without consensus stay unlabelled"),
    keep_labels: bool = typer.Option(False, "--keep-labels",
                                     help="keep the existing labels; only record the annotators' beside them"),
) -> None:
    """Join annotators' labels into a gold set; report how far they agree (κ, α, AC1) and where not."""
    from localbench.errors import UserError
    from localbench.judging.agreement import agreement_across_judges, cohen_kappa
    from localbench.judging.gold import annotator_labels, disagreements, merge, read_gold, write_gold

    if rule not in ("majority", "unanimous"):
        raise UserError(f"--rule: expected majority or unanimous, got '{rule}'")
    items = read_gold(gold)
    by = annotator_labels(items, labels)
    merged = merge(items, by, rule=rule, keep_existing=keep_labels)  # type: ignore[arg-type]
    write_gold(out, merged)
    typer.echo(f"{len(merged)} items, {sum(it.label is not None for it in merged)} labelled ({rule}) → {out}")
    names = sorted(by)
    for a in names:
        typer.echo(f"  {a}: {sum(v is not None for v in by[a].values())} labels")
    if len(names) >= 2:
        import itertools
        import json

        from localbench.files import write_lines_atomic
        from localbench.judging.labeller import opaque_number

        for a, b in itertools.combinations(names, 2):
            k = cohen_kappa(by[a], by[b])
            typer.echo(f"  κ({a}, {b}) = {k.estimate:.2f} [{k.low:.2f}, {k.high:.2f}] on {k.n} items")
        ag = agreement_across_judges(by)
        typer.echo(f"  α (ordinal) = {ag.alpha_ordinal.estimate:.2f} [{ag.alpha_ordinal.low:.2f}, "
                   f"{ag.alpha_ordinal.high:.2f}]; AC1 = {ag.ac1.estimate:.2f} [{ag.ac1.low:.2f}, {ag.ac1.high:.2f}]")
        diff = disagreements(by)
        path = out.with_name(out.name + ".disagreements.jsonl")
        write_lines_atomic(path, (json.dumps({"item_id": i, "shown_as": opaque_number(i), "labels": lv})
                                  for i, lv in diff))
        typer.echo(f"  {len(diff)} items labelled differently → {path}")
        for i, lv in diff[:DISAGREEMENTS_SHOWN]:
            typer.echo(f"    {opaque_number(i)} {i}: " + ", ".join(f"{a} {v}" for a, v in lv.items()))
        if len(diff) > DISAGREEMENTS_SHOWN:
            typer.echo(f"    … {len(diff) - DISAGREEMENTS_SHOWN} more in {path}")


@gold_app.command("reference")
def gold_reference(
    gold: Path = typer.Option(..., "--gold", help="items to label (their labels are ignored)"),
    judge: str = typer.Option(..., "--judge", help="the reference judge preset"),
    out: Path = typer.Option(..., "--out", help="pseudo-gold JSONL to write"),
    work: Optional[Path] = typer.Option(None, help="eval directory for the judge's answers (default: <out>.eval)"),
    engine: str = typer.Option("auto"),
    base_url: Optional[str] = typer.Option(None, "--base-url"),
    benchmark: str = typer.Option(DEFAULT_BENCHMARK, help=BENCHMARK_HELP),
) -> None:
    """Label items with a reference judge and save its labels as a (pseudo-)gold set."""
    from localbench.registry import get_benchmark
    from localbench.judging.gold_eval import EvalConfig, load_eval, run_eval
    from localbench.judging.gold import Provenance, read_gold, write_gold

    wd = work or out.with_name(out.name + ".eval")
    cfg = EvalConfig(judges=[judge], engine=engine, base_url=base_url, benchmark=benchmark)
    bm = get_benchmark(benchmark)
    asyncio.run(run_eval(gold, wd, cfg, bm.item_judge, judges=[judge], rubric_files=bm.rubric_files(),
                         gold_judge=_gold_judge_of(bm, gold)))
    data = load_eval(wd)
    labels = data.judge_labels(judge)  # in the judge's own labels (abstraction scores, yes/no ...)
    asked_ids = {it.id for it in data.gold}
    items = [it.model_copy(update={"label": labels.get(it.id), "annotations": {},
                                   "source": Provenance(kind="judge", judge=judge, method=it.source.method,
                                                        note=f"answers in {wd}")})
             for it in read_gold(gold) if it.id in asked_ids]
    write_gold(out, items)
    failed = sum(v is None for v in labels.values())
    typer.echo(f"{len(items) - failed} items labelled by {judge}, {failed} failed (left unlabelled) → {out}")


@judges_app.command("label")
def label(
    gold: Path = typer.Argument(..., help="gold JSONL to label"),
    annotator: str = typer.Option(..., "--annotator", help="your name; one label file per annotator"),
    labels: Optional[Path] = typer.Option(None, help="label file (default: <gold>.labels.<annotator>.jsonl)"),
    redo_skipped: bool = typer.Option(False, "--redo-skipped", help="show skipped items again"),
    order_seed: int = typer.Option(0, "--order-seed",
                                   help="seed of the annotator's item order (with the annotator's name; recorded)"),
) -> None:
    """Label items one keypress at a time in the item's judge's labels (n / p / f; abstraction 0 / h / 1 / n;
    task y / n; s skip, q quit), blind: an opaque number, no id or method, in a seeded order of your own;
    saved after every answer."""
    from localbench.judging.labeller import label_session

    summary = label_session(gold, annotator, labels, redo_skipped=redo_skipped, order_seed=order_seed)
    if summary.interrupted:
        raise typer.Exit(130)


@judges_app.command("sample")
def sample_cmd(
    run_dir: Path = typer.Argument(..., help="a finished run directory (runs/<id>)"),
    n: int = typer.Option(..., "--n", min=1, help="items to draw"),
    out: Optional[Path] = typer.Option(None, "--out", help="folder to write (default: <run>/sample-<seed>)"),
    seed: int = typer.Option(0, help="sampling seed (same seed, same sample and order)"),
    judge: list[str] = typer.Option([], "--judge", help="a benchmark judge to sample (repeatable; default: every "
                                                        "judge the benchmark can sample)"),
    labels_of: Optional[str] = typer.Option(None, "--labels-of",
                                            help="whose labels stratify: the run's own judge (default) or the preset of "
                                                 "one of its rejudges (`judges rejudge`)"),
) -> None:
    """Draw a stratified sample of the run's real judge inputs (by judge, category, condition and the judge's
    label) into a blind file for `judges label`, and a private key for `judges gold import --key`."""
    import hashlib

    from localbench.errors import UserError
    from localbench.judging.sample import (Frame, SampleInfo, draw, model_names, with_simulation,
                                           write_sample)
    from localbench.rejudge import LoadedRun, run_judgments
    from localbench.runlog import RunDir, by_simulation

    run = LoadedRun.read(run_dir)
    bm = run.benchmark
    if not bm.sampled_judges:
        raise UserError(f"{run_dir}: benchmark '{bm.name}' has no judge whose inputs can be sampled yet")
    judges = judge or list(bm.sampled_judges)
    unknown = [j for j in judges if j not in bm.sampled_judges]
    if unknown:
        raise UserError(f"--judge: '{unknown[0]}' is not sampled for {bm.name} (sampled: {', '.join(bm.sampled_judges)})")
    sources = [r for r in run_judgments(run) if r.judge != bm.planted_judge]
    if labels_of:
        src = next((r for r in sources if r.judge == labels_of), None)
    else:
        src = next((r for r in sources if r.own), sources[0] if len(sources) == 1 else None)
    if src is None:
        have = ", ".join(r.judge for r in sources) or "none"
        raise UserError(f"{run_dir}: no judgments {'of ' + repr(labels_of) if labels_of else 'of the run’s own judge'} "
                        f"(judged by: {have}); name one with --labels-of")
    by_sim = by_simulation(src.records)
    frame = Frame([])
    for t in run.transcripts:
        scenario = run.scenarios.get(t.scenario)
        if scenario is None:
            raise UserError(f"{run_dir}: transcript {t.key}: scenario '{t.scenario}' is not in {run.spec.scenarios}")
        part = bm.judge_inputs(t, scenario, [j for j in by_sim.get(t.key, []) if j.judge in judges], run.spec)
        part.inputs = [with_simulation(x, t, src.judge) for x in part.inputs]
        frame.add(part)
    if not frame.inputs:
        raise UserError(f"{run_dir}: no judge inputs of {', '.join(judges)} to sample "
                        + (f"({'; '.join(f'{v} {k}' for k, v in frame.left_out.items())})" if frame.left_out else ""))
    chosen, strata = draw(frame.inputs, n, seed)
    rd = RunDir(run_dir)
    spec_doc = rd.read_spec() or {}
    where = out or Path(run_dir) / f"sample-{seed}"
    info = SampleInfo(run=str(run_dir), run_id=run.spec.resolved_run_id, benchmark=bm.name,
                      spec_hash=hashlib.sha256(rd.spec_file.read_bytes()).hexdigest()[:16], judge_model=src.judge,
                      judges=judges, n=n, seed=seed, strata=[], available=len(frame.inputs), left_out=frame.left_out,
                      scrubbed_names=model_names(spec_doc, run.transcripts, [src.judge]))
    blind, key = write_sample(where, chosen, strata, info)
    typer.echo(f"{len(chosen)} of {len(frame.inputs)} judge inputs ({', '.join(judges)}; labels of {src.judge}) "
               f"in {len(strata)} strata, seed {seed}")
    for (j, cat, cond, lab), (d, a) in strata.items():
        typer.echo(f"  {j} {cat} {cond} {lab}: {d} of {a}")
    for reason, k in frame.left_out.items():
        typer.echo(f"  left out: {k} calls {reason}")
    typer.echo(f"blind file for labellers → {blind}\n  (label: localbench judges label {blind} --annotator NAME)")
    typer.echo(f"private key (do not hand out) → {key}\n  (then: localbench judges gold import LABELS... "
               f"--key {key} --out gold.jsonl)")


@judges_app.command("eval")
def eval_(
    judges: Optional[str] = typer.Option(None, "--judges", help=JUDGES_HELP),
    judge: list[str] = typer.Option([], "--judge", help=JUDGE_HELP),
    gold: list[Path] = typer.Option(..., "--gold", help="gold JSONL; repeat for several benchmark judges' sets "
                                                      "(e.g. gold.jsonl --gold gold.task.jsonl): one eval "
                                                      "folder per judge under --out, OUT/<judge>, and a report "
                                                      "with one section per judge"),
    out: Path = typer.Option(..., "--out", help="eval directory (resumable)"),
    batch: bool = typer.Option(True, "--batch-like-run/--one-per-call",
                               help="ask all of an owner's items in one call, as a run does (default), or each "
                                    "item on its own"),
    sample: int = typer.Option(0, "--sample", min=0,
                               help="ask a stratified sample of N items (by method and label, seeded) instead of all"),
    seeds: int = typer.Option(1, "--seeds", min=1, help="K: seed 0 greedy, seeds 1..K-1 sampled"),
    shuffle: bool = typer.Option(False, "--shuffle", help="also judge with the messages in another order"),
    pad: bool = typer.Option(False, "--pad", help="also judge with neutral filler messages added"),
    pad_messages: int = typer.Option(8, help="filler messages added by --pad"),
    temperature: float = typer.Option(0.7, help="sampling temperature of seeds >= 1"),
    max_tokens: int = typer.Option(400, help="max tokens per judge answer"),
    seed: int = typer.Option(0),
    engine: str = typer.Option("auto", help="auto | hf | vllm | openai"),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="openai engine: the server's /v1 URL"),
    report: bool = typer.Option(True, help="write the report when done"),
    benchmark: str = typer.Option(DEFAULT_BENCHMARK, help=BENCHMARK_HELP),
    cache: Optional[Path] = typer.Option(None, "--cache", help="the response cache file (default: OUT/cache.sqlite; "
                                                               "each --slurm job has its own)"),
    slurm: bool = typer.Option(False, "--slurm", help="submit one Slurm job per judge into --out, then a report "
                                                      "job after them all (docs/judges.md)"),
    slurm_options: Optional[Path] = typer.Option(None, "--slurm-options",
                                                 help="--slurm: YAML with the jobs' sbatch options (a run spec's "
                                                      "`slurm:` section: gres, time, venv, ...)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="--slurm: write the scripts into a dry-run folder of OUT's Slurm folder and "
                                                          "print the sbatch commands; submit nothing"),
) -> None:
    """Run judges over a gold set with the benchmark's rubric and schema, asked as a run asks them
    (here, one judge after another; or with --slurm, one Slurm job per judge)."""
    from localbench.registry import get_benchmark
    from localbench.judging.gold_eval import EvalConfig, run_eval

    if slurm or dry_run or slurm_options:
        if not slurm:
            raise typer.BadParameter("--dry-run and --slurm-options go with --slurm")
        settings = ["--batch-like-run" if batch else "--one-per-call", "--sample", str(sample), "--seeds", str(seeds),
                    *(["--shuffle"] if shuffle else []), *(["--pad"] if pad else []), "--pad-messages",
                    str(pad_messages), "--temperature", str(temperature), "--max-tokens", str(max_tokens),
                    "--seed", str(seed), "--engine", engine, *(["--base-url", base_url] if base_url else []),
                    "--benchmark", benchmark]
        _eval_on_slurm(_judges(judges, judge), gold, out, settings, slurm_options, dry_run)
        return
    cfg = EvalConfig(judges=_judges(judges, judge), seeds=seeds, shuffle=shuffle, pad=pad, pad_messages=pad_messages,
                     temperature=temperature, max_tokens=max_tokens, seed=seed, engine=engine, base_url=base_url,
                     benchmark=benchmark, batch=batch, sample=sample)
    from dataclasses import replace

    from localbench.errors import UserError

    bm = get_benchmark(benchmark)
    measured = [(g, _gold_judge_of(bm, g)) for g in gold]
    names = [gj.name for _, gj in measured]
    if len(set(names)) < len(names):
        raise UserError(f"--gold: two files ask about the same judge ({', '.join(names)}); give one per judge")
    dirs = {gj.name: (out if len(measured) == 1 else out / gj.name) for _, gj in measured}
    for g, gj in measured:
        summaries = asyncio.run(run_eval(g, dirs[gj.name], replace(cfg, judges=list(cfg.judges)), bm.item_judge,
                                         rubric_files=bm.rubric_files(), gold_judge=gj, cache=cache))
        for j, s in summaries.items():
            long = f" ({s.too_long} prompts too long for the judge's context, not sent)" if s.too_long else ""
            prefix = f"{gj.name}: " if len(measured) > 1 else ""
            typer.echo(f"{prefix}{j}: {s.done} calls made, {s.skipped} already done, {s.failed} failed{long}")
    if report:
        if len(measured) == 1:
            _report(out, [], 1000)
        else:
            _report_judges(out, dirs, 1000)


def _report_judges(out: Path, dirs: dict[str, Path], resamples: int) -> None:
    """Each judge's own report in its folder, and OUT/report.md with one section per judge."""
    from localbench.judging.gold_eval import load_eval
    from localbench.judging.reliability import reliability
    from localbench.judging.report import write_judges_report, write_report

    rels = {}
    for name, d in dirs.items():
        rels[name] = reliability(load_eval(d), n_resamples=resamples)
        write_report(rels[name], d)
    path = write_judges_report(rels, out)
    for name, rel in rels.items():
        from localbench.judging.report import verdict_lines

        for line in verdict_lines(rel):
            typer.echo(f"{name}: {line}")
    typer.echo(str(path))


def _gold_judge_of(bm, gold: Path):
    """The benchmark judge a gold file's items ask about (their ``judge``; none: the item judge)."""
    from localbench.errors import UserError
    from localbench.judging.gold import read_gold
    from localbench.judging.gold_eval import bench_judge_of
    from localbench.judging.judge_gold import gold_judges_of, item_judge_name

    items = read_gold(gold)
    built_for = {str((it.meta.get("build") or {}).get("benchmark")) for it in items if (it.meta.get("build") or {}).get("benchmark")}
    if built_for - {bm.name}:
        raise UserError(f"{gold}: built for the {', '.join(sorted(built_for))} benchmark, not {bm.name}; "
                        f"give --benchmark {sorted(built_for)[0]}")
    name = bench_judge_of(items, gold) or item_judge_name(bm)
    known = gold_judges_of(bm)
    if name not in known:
        raise UserError(f"{gold}: its items ask about the '{name}' judge, which {bm.name} does not have "
                        f"(its judges with gold: {', '.join(known)}); is --benchmark right?")
    return known[name]


def _eval_on_slurm(judges: list[str], golds: list[Path], out: Path, settings: list[str], options: Optional[Path],
                   dry_run: bool) -> None:
    """`judges eval --slurm`: one job per judge, then the report job (localbench.slurm.judges_eval)."""
    from localbench.errors import UserError
    from localbench.judging.gold import read_gold
    from localbench.slurm import judges_eval

    if len(golds) != 1:
        raise UserError(f"--gold: --slurm takes one gold set, not {len(golds)}; submit once per gold set, each "
                        "with its own --out")
    gold = golds[0]
    read_gold(gold)  # a bad gold set is refused here, not in every job
    jobs = judges_eval.eval_jobs(judges, gold, out, settings, judges_eval.read_options(options), Path.cwd())
    if dry_run:
        folder = out.resolve() / RunFiles.SLURM / "dry-run"
        typer.echo(f"# judges eval on Slurm: {len(judges)} judge job(s) and a report job; scripts written to {folder}")
        typer.echo("\n".join(judges_eval.dry_run(jobs, folder)))
        typer.echo("# (dry run: nothing submitted)")
        return
    ids = judges_eval.submit(jobs, out.resolve(), Path.cwd())
    for j, job_id in ids.items():
        typer.echo(f"{j}: job {job_id}")
    slurm_dir = out.resolve() / RunFiles.SLURM
    typer.echo(f"job ids in {slurm_dir / 'submission.json'}; logs in {slurm_dir / 'logs'}")


@judges_app.command("rejudge")
def rejudge_cmd(
    run_dir: Path = typer.Argument(..., help="a finished run directory (runs/<id>)"),
    judges: Optional[str] = typer.Option(None, "--judges", help=JUDGES_HELP + " (oracle and noisy: planted runs)"),
    judge: list[str] = typer.Option([], "--judge", help=JUDGE_HELP),
    all_judges: bool = typer.Option(False, "--all-judges",
                                    help="also rerun the abstraction, task and behaviour judges (default: leakage only)"),
    judge_eval: Optional[Path] = typer.Option(
        None, "--judge-eval", help="a `localbench judges eval` directory that measured these judges: one not above "
                                   "its best cheater there gets a judge warning (default: the run spec's judge_eval)"),
) -> None:
    """Judge a finished run with other judges; writes runs/<id>/judges/<preset>/."""
    from localbench.rejudge import rejudge

    for p in rejudge(run_dir, _judges(judges, judge), leakage_only=not all_judges,
                     judge_eval=str(judge_eval) if judge_eval else None):
        typer.echo(str(p))


@judges_app.command("report")
def report_cmd(
    eval_dir: Path = typer.Argument(..., help="an eval directory written by `localbench judges eval`"),
    run: list[Path] = typer.Option([], "--run", help="finished run directories for the consequences (repeat)"),
    resamples: int = typer.Option(1000, help="bootstrap resamples"),
) -> None:
    """Markdown + HTML report with tables, confusion matrices and a verdict per judge."""
    _report(eval_dir, run, resamples)


def _report(eval_dir: Path, runs: list[Path], resamples: int) -> None:
    from localbench.consequences import for_runs
    from localbench.judging.gold_eval import load_eval
    from localbench.judging.reliability import reliability
    from localbench.judging.report import verdict_lines, write_report

    rel = reliability(load_eval(eval_dir), n_resamples=resamples,
                      consequences=for_runs([str(r) for r in runs]) if runs else None)
    paths = write_report(rel, eval_dir)
    for line in verdict_lines(rel):  # an incomplete or sampled eval says so first
        typer.echo(line)
    typer.echo(str(paths.html))


@judges_app.command("plant-run")
def plant_run_cmd(
    source: str = typer.Option("builtin", "--from", help="scenarios (dyadic categories are used)"),
    out: Path = typer.Option(..., "--out", help="run directory to write (runs/<id>)"),
    models: str = typer.Option("planted-low:0.3,planted-high:0.7",
                               help="comma-separated NAME:SHARE, SHARE = chance an item is planted as a leak"),
    seed: int = typer.Option(0),
    benchmark: str = typer.Option(DEFAULT_BENCHMARK, help=BENCHMARK_HELP),
) -> None:
    """A synthetic run with known leak rates, to check a judge and the pipeline end to end."""
    from localbench.registry import get_benchmark
    from localbench.errors import UserError

    shares: dict[str, float] = {}
    for part in _csv(models):
        name, _, share = part.partition(":")
        try:
            shares[name] = float(share)
        except ValueError:
            raise UserError(f"--models: '{part}' is not NAME:SHARE") from None
    typer.echo(str(get_benchmark(benchmark).write_planted_run(out, source, shares, seed=seed)))


def register(app: typer.Typer) -> None:
    app.add_typer(judges_app, name="judges")
