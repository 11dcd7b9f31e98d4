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

# The full suite (under 15 minutes on 2 cores); -rs shows the reason of every skip. lint-imports
# checks the import rules of docs/architecture.md (the contracts in pyproject.toml).
test: setup system-deps
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -rs -p no:cacheprovider

# The inner loop: everything but the tests marked slow (long real runs).
test-fast: setup
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -rs -p no:cacheprovider -m "not slow"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

bench: setup
	$(BIN)/python benchmarks/worker_throughput.py

clean:
	rm -rf $(VENV) build *.egg-info demo-results test-artifacts
