"""Judging: judge runner, gold sets and reliability statistics for the benchmarks' judges."""
