"""The abductive attacker: hypotheses and evidence kept in one cross-post evidence graph.

``graph`` holds the typed nodes and edges (what is saved per user), ``routing`` says which tool a
hypothesis should be checked with, ``loop`` runs perceive → hypothesize → select → route → collect →
verify until the graph is stable or the route budget is spent, ``attacker`` wraps it as an
``attack.Attacker`` and ``render`` draws a saved graph for audit (HTML, PNG).
"""
