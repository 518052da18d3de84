"""Benchmarks are plug-ins: each registers its scenario loader, simulator, judges and metrics."""
