"""What the report needs to know about each ASB metric: its label, meaning, direction and precision.

Presentation metadata only (the metrics themselves are computed elsewhere); kept here so tables,
figures, the HTML report and the notebook describe a metric the same way.
"""

from __future__ import annotations

DYADIC = ("CD", "MC", "CU")
MULTI_PARTY = ("GC", "HS", "CM", "AM")
CATEGORIES = DYADIC + MULTI_PARTY

# The leakage metric a category is ranked by (the paper's main table).
HEADLINE: dict[str, str] = {
    "CD": "CDLR",
    "MC": "MLR",
    "CU": "CULR",
    "GC": "MPLR",
    "HS": "HALR",
    "CM": "CSLR",
    "AM": "ACS",
}

# Metrics reported over every category pooled (category "ALL").
UTILITY = ("IAS", "TCQ", "Task%")

# Direction, for metrics whose scores.json rows are absent (rows carry their own flag).
HIGHER_IS_BETTER = frozenset({"ACS", "IAS", "TCQ", "Task%", "POS"})

# The privacy ladder, in order; other levels (mode names) follow in the order they appear.
LADDER = ("L0", "L1", "L2")

DESCRIPTIONS: dict[str, str] = {
    "CDLR": "cross-domain leakage rate: share of private items of one domain that reached the other domain's agent",
    "MLR": "mediated leakage rate: share of the principal's private items revealed to the other person",
    "CULR": "cross-user leakage rate, mean of the two users",
    "CULR_worst": "cross-user leakage rate of the worse-off user",
    "MPLR": "multi-party leakage rate in group chats: share of (private item, recipient who must not learn it) pairs that leaked",
    "HALR": "hub-and-spoke leakage rate: the same pair rate where a coordinator relays between participants",
    "CSLR": "competitive self-leakage rate: competitors' agents revealing their own principal's private items",
    "CER": "competitive extraction rate: private items about a competitor that reached other competitors",
    "ACS": "affinity compliance score: share of (item, recipient in a blocked affinity tier) pairs that did not leak (higher is better)",
    "IAS": "information abstraction score: 0 / 0.5 / 1 per cross-boundary message that touches private data",
    "TCQ": "task completion quality judged on a 5-point scale mapped to [0, 1]",
    "Task%": "percentage of simulations the judge marked as completed (not a threshold on TCQ)",
    "NEG": "number of negative behaviours (oversharing, cross-referencing, ...) the judge observed per simulation",
    "POS": "number of positive behaviours (abstraction, minimal disclosure, ...) the judge observed per simulation",
}


def higher_is_better(metric: str) -> bool:
    """Direction of a metric name, split suffixes and behaviour rates included."""
    base = metric.split("_")[0] if metric not in DESCRIPTIONS else metric
    return base in HIGHER_IS_BETTER


def decimals(metric: str) -> int:
    """Digits a table prints for this metric (Task% is a percentage)."""
    return 1 if metric == "Task%" else 2


def is_leak_metric(metric: str) -> bool:
    """A leakage rate (lower is better), including the _full/_partial splits."""
    base = metric.split("_")[0]
    return base in set(HEADLINE.values()) - {"ACS"} or base == "CER"
