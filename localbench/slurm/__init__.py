"""Run a spec as a Slurm job array: render sbatch scripts, submit, watch, cancel, resubmit, merge.

One array task per shard (RunSpec.select_shard deals the work keys round-robin); each shard writes
its own run directory RUN/shards/<i>/, so a requeued task resumes from its own files and cache. A
dependent job merges the shards into RUN/ and runs the later stages there.
"""
