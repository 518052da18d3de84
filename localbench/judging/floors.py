"""Two reference floors: rules that label gold items without understanding them.

A judge is only worth measuring on a gold set these rules cannot pass. ``localbench judges eval``
scores both, with the other cheaters of ``localbench.judging.cheaters``, on the same items as every
judge, and the report prints them beside each judge; ``localbench judges gold build`` checks the
set it built with the cheater bank (``localbench.judging.goldcheck``). ``too_easy`` (κ ≥
``FLOOR_WARN``) is the older, looser test of the per-method construction.

- **substring**: reads the words. "full" when the private item appears verbatim in the messages or
  at least ``cheaters.FULL_SHARE`` of its content words do; "partial" when at least
  ``cheaters.PARTIAL_SHARE`` of them do; otherwise "none" (``cheaters.substring_label``). It passes a set whose leaks all repeat the item's words and whose
  non-leaks do not.
- **template**: reads the sentences. It knows every template of judges/gold/construction.yaml and
  every wording of judges/gold/lexicon.yaml, finds which of them each item's messages use, and
  answers with the label that the most telling of those templates carries most often in this very
  set (learnt from the set's own labels: the best any rule keyed on the templates can do). It
  passes a set in which each sentence goes with one label.

Both look at each item's own messages (not a batch of them) and never fail. Beside them the eval
scores the cheater bank's null models (``cheaters.NULL_MODELS``: a constant answer per label, a
length-only and a position-only rule), which a judge must beat to get a verdict other than "do not
use".
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from functools import lru_cache
from typing import Iterable, Sequence

from localbench.judging.cheaters import NULL_MODELS, cheater_leaks, null_labels, substring_label
from localbench.judging.construct import lexicon, templates
from localbench.judging.gold import GoldItem

FLOORS = ("substring", "template", "any_token", "keywords", "learned", *NULL_MODELS)
FLOOR_PREFIX = "floor: "
FLOOR_WARN = 0.6  # a floor at or above this κ (3-class or binary) makes a set too easy to rank judges
_PLACEHOLDER = re.compile(r"\{[a-z_0-9]+\}|\\\d")
_MIN_LITERAL_WORDS = 2  # a template needs this many literal words to be recognisable
MIN_TEMPLATE_ITEMS = 3  # a template must be seen with this many private items before its label is learnt
FOLDS = 5  # the template floor labels each item with a model fitted on the other folds (grouped by private item)


def floor_name(floor: str) -> str:
    return FLOOR_PREFIX + floor


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[str, str, re.Pattern], ...]:
    """(template id, regex) for every template and wording the builder knows."""
    t = templates()
    raw: list[tuple[str, str]] = []
    for group, entries in t.items():
        if isinstance(entries, dict):
            for tid, tpl in entries.items():
                if isinstance(tpl, list):
                    raw += [(f"{tid}/{k}", x) for k, x in enumerate(tpl)]
                elif isinstance(tpl, str):
                    raw.append((tid, tpl))
        elif isinstance(entries, list) and group in ("filler", "padding"):
            raw += [(f"{group}.{k}", x) for k, x in enumerate(entries) if isinstance(x, str)]
    for c in lexicon():
        raw += [(f"{c.id}.clue{k}", x) for k, x in enumerate(c.clues)]
        raw += [(f"{c.id}.say{k}.{j}", x) for k, f in enumerate(c.forms) for j, x in enumerate(f.say)]
        raw += [(f"{c.id}.topic{k}", x) for k, x in enumerate(c.topic)]
    out = []
    for tid, tpl in raw:
        pieces = _PLACEHOLDER.split(tpl)
        if sum(len(p.split()) for p in pieces) < _MIN_LITERAL_WORDS:
            continue
        rx = r".+?".join(r"\s+".join(re.escape(w) for w in p.split()) for p in pieces)
        longest = max((" ".join(p.split()).lower() for p in pieces), key=len)
        out.append((tid, longest, re.compile(rx, re.I)))
    return tuple(out)


def matched_templates(item: GoldItem) -> set[str]:
    """The ids of the templates and wordings an item's messages use."""
    body = "\n".join(m.content for m in item.messages)
    flat = " ".join(body.lower().split())
    return {tid for tid, longest, rx in _patterns() if longest in flat and rx.search(body)}


def template_labels(items: Sequence[GoldItem]) -> dict[str, str | None]:
    """The template floor's labels for a labelled set (see the module docstring).

    Features: which templates an item's messages use (those seen with at least
    ``MIN_TEMPLATE_ITEMS`` private items). Model: a logistic regression from those features to the
    label, fitted on the other folds of a ``FOLDS``-fold split grouped by private item, so each item
    is labelled by what the templates of *other* items taught (no memorising); with fewer private
    items than folds it is fitted on the whole set. Unlabelled items get None.
    """
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    labelled = [it for it in items if it.label is not None]
    out: dict[str, str | None] = {it.id: None for it in items}
    if not labelled:
        return out
    used = {it.id: matched_templates(it) for it in labelled}
    sources: dict[str, set[str]] = defaultdict(set)
    for it in labelled:
        for tid in used[it.id]:
            sources[tid].add(it.item.id or it.item.text)
    # a wording used with one or two private items only is content, not a template: learning its
    # label would be memorising those items
    feats = sorted(t for t in sources if len(sources[t]) >= MIN_TEMPLATE_ITEMS)
    x = np.array([[t in used[it.id] for t in feats] for it in labelled], dtype=float).reshape(len(labelled), len(feats))
    y = np.array([it.label for it in labelled])
    groups = [it.item.id or it.item.text for it in labelled]

    def fit_predict(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        classes = sorted(set(y[train]))
        if len(classes) == 1 or not feats:
            top = Counter(y[train]).most_common(1)[0][0]
            return np.array([top] * len(test), dtype=object)
        model = LogisticRegression(C=1.0, max_iter=2000).fit(x[train], y[train])
        return model.predict(x[test])

    pred = np.empty(len(labelled), dtype=object)
    if len(set(groups)) >= FOLDS:
        for train, test in GroupKFold(FOLDS).split(x, y, groups):
            pred[test] = fit_predict(train, test)
    else:
        every = np.arange(len(labelled))
        pred[:] = fit_predict(every, every)
    out.update({it.id: str(p) for it, p in zip(labelled, pred)})
    return out


def floor_labels(items: Sequence[GoldItem]) -> dict[str, dict[str, str | None]]:
    """{floor name: {item id: label}} for both floors and the cheater bank's other cheaters
    (``localbench.judging.cheaters``: any-token, keywords, the learned bag of n-grams, binary
    labels, none or full; the null models, each constant with its own label)."""
    out = {floor_name("substring"): {it.id: substring_label(it) if it.label is not None else None for it in items},
           floor_name("template"): template_labels(items)}
    for name, got in cheater_leaks(items).items():
        if name != "substring" and name not in NULL_MODELS:
            out[floor_name(name)] = {it.id: (("full" if got[it.id] else "none") if it.id in got else None)
                                     for it in items}
    for name, labels in null_labels(items).items():
        out[floor_name(name)] = {it.id: labels.get(it.id) for it in items}
    return out


def floor_kappas(items: Iterable[GoldItem], n_resamples: int = 0) -> dict[str, tuple[float, float]]:
    """{floor: (κ, binary κ)} of each floor against the items' labels."""
    from localbench.judging.agreement import cohen_kappa

    items = list(items)
    gold = {it.id: it.label for it in items}
    out = {}
    for name, labels in floor_labels(items).items():
        k = cohen_kappa(gold, labels, n_resamples=max(1, n_resamples)).estimate
        kb = cohen_kappa(gold, labels, binary=True, n_resamples=max(1, n_resamples)).estimate
        out[name.removeprefix(FLOOR_PREFIX)] = (k, kb)
    return out


def too_easy(kappas: dict[str, tuple[float, float]]) -> list[str]:
    """The floors that reach ``FLOOR_WARN`` (3-class or binary κ)."""
    return [f for f, (k, kb) in kappas.items() if max(k, kb) >= FLOOR_WARN]
