# llm-locust: `make demo` runs the main job against the bundled simulator; `make test` runs the tests.
# Both set everything up first (a .venv with the package, and the Debian packages the tests use).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup system-deps demo test test-fast lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

# Debian packages used by the integration tests: a real Prometheus server and headless Chromium.
system-deps:
	@bash .ci/system-deps

demo: setup
	$(BIN)/llm-locust demo

# The suite runs in two parts: most tests wait on real processes (runs of 10-60 s, a search's
# steps), so they run JOBS at a time (pytest-xdist; the tests of one module stay on one worker,
# so a module-scoped fixture is built once: tests/conftest.py); the few marked `serial` depend on
# the client's own timing and run after, alone. Both parts always run; -rs shows every skip's reason;
# --durations=30 lists each part's 30 slowest test phases (setup, call, teardown), to see where the time goes.
JOBS   ?= 3
PYTEST := $(BIN)/python -m pytest -q -rs -p no:cacheprovider --durations=30
# $(call suite,MARKS): the parallel part, then the serial part, of the tests selected by MARKS
suite = status=0; \
	$(PYTEST) -n $(JOBS) --dist loadscope --no-loadscope-reorder -m "not serial $(1)" || status=$$?; \
	$(PYTEST) -m "serial $(1)" || status=$$?; \
	exit $$status

# The full suite (its duration on the development machine: benchmarks/README.md). lint-imports checks the import
# rules of docs/architecture.md (the contracts in pyproject.toml); mypy the types ([tool.mypy]).
test: setup system-deps
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(call suite,)

# The inner loop: everything but the tests marked slow (long real runs).
test-fast: setup
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(call suite,and not slow)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

bench: setup
	$(BIN)/python benchmarks/worker_throughput.py

clean:
	rm -rf $(VENV) build *.egg-info demo-results test-artifacts
