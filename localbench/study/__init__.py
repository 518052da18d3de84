"""Studies: several models across the benchmarks from one file (``study.yaml``), as ordinary runs.

``spec`` reads and checks the file, ``plan`` builds one RunSpec per (benchmark, model), ``run``
executes them one engine at a time with each benchmark's judge loaded once, ``status`` says what
each cell holds; ``compare`` reads any set of runs into the papers' tables.
"""
