# ditto-tui — run, test and measure from a fresh clone.
#
# Installs happen only when their inputs change: each one leaves a stamp file that depends on the
# file it was made from (pyproject.toml, package.json / package-lock.json).

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python

RUNTIME_STAMP := $(VENV)/.installed-runtime
DEV_STAMP := $(VENV)/.installed-dev
NPM_STAMP := node_modules/.installed

# Tests start `ditto-tui` and the reference MCP servers as subprocesses: put both on PATH.
TEST_PATH := $(CURDIR)/$(BIN):$(CURDIR)/node_modules/.bin:$(PATH)

# pytest loads the plugins the suite uses and no others. Left to itself it loads every installed one
# (langsmith's, which the LangGraph benchmark brings, among them) and rewrites the assertions of every
# module of their packages that a test imports (anyio, hypothesis): 27 s of each worker's start, not 8 s.
PYTEST := PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 \
	PYTEST_PLUGINS=pytest_asyncio.plugin,xdist.plugin,pytest_timeout,syrupy,pytest_textual_snapshot,_hypothesis_pytestplugin \
	PATH="$(TEST_PATH)" $(PY) -m pytest

.PHONY: help run test lint bench fuzz bytecode chromium

help:
	@echo "make run    start ditto-tui (creates .venv on first use)"
	@echo "make test   lint, type-check, import contracts, then the test suite"
	@echo "make fuzz   the Hypothesis properties only, with many more examples each"
	@echo "make bench  runtime overhead per node: ditto_tui vs LangGraph vs bare asyncio"
	@echo "           and a capped command: cat of a 2 GiB sparse file (time, peak memory)"
	@echo "           and MCP over stdio: ACT.MCP invoke and discovery vs the raw SDK"
	@echo "           and the run journal: write cost per event, fsync, overhead on the 50-node graph"
	@echo "           and the UI: 20,000 tool calls into the Run screen vs a bare RichLog, cold start"
	@echo "           and traces: a 1,000-node run with OpenTelemetry export on vs off"

$(PY):
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

# The dev extra includes the runtime dependencies, so it satisfies the runtime stamp too.
$(DEV_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@ $(RUNTIME_STAMP)

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Every start of ditto-tui (the app, each CLI command, each test's subprocess) imports about 190 of its
# own modules. Compiled once here, they are read from __pycache__ instead of compiled on each start
# (0.5 s a start on 2 cores), also where PYTHONDONTWRITEBYTECODE stops Python writing them itself.
# Only files changed since their last compilation are compiled again.
bytecode: | $(PY)
	$(PY) -m compileall -q -j 0 ditto_tui examples benchmarks tests

run: $(RUNTIME_STAMP) bytecode
	$(BIN)/ditto-tui

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy ditto_tui tests
	$(BIN)/lint-imports

# `python -m pytest` puts the repository root on sys.path, so tests can import `examples` and
# `benchmarks`. pytest exits 5 when it collected nothing; that is a failure here, and says so.
# Three workers on two cores, each taking whole files (module-scoped servers stay in one process): the
# third fills the waits on servers, browsers and subprocesses (12 min 21 s to 13 min 5 s here, against
# 13 min 52 s to 14 min 1 s with two). The tests that bound a latency compare it with what the same
# process sees on its own, or wait for what they check, so the extra load does not fail them.
# The browser tests drive Debian's Chromium with Playwright (which never downloads a browser of its own).
chromium:
	@command -v chromium > /dev/null || command -v chromium-browser > /dev/null || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get > /dev/null; then \
			export DEBIAN_FRONTEND=noninteractive; \
			apt-get install -y -q chromium > /dev/null 2>&1 || \
				{ apt-get update -q > /dev/null && apt-get install -y -q chromium > /dev/null; }; \
		else \
			echo "make test: Chromium is missing: install it (sudo apt-get install chromium) and run make test again" >&2; \
			exit 1; \
		fi; }

test: lint $(NPM_STAMP) bytecode chromium
	$(PYTEST) -n 3 --dist loadfile || { rc=$$?; \
		if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; exit $$rc; }

# The same properties as `make test`, each with FUZZ_FACTOR (tests/properties.py) times more examples.
fuzz: $(DEV_STAMP)
	HYPOTHESIS_PROFILE=fuzz $(PYTEST) -m property

# The benchmarks' journals and logs go to a home of their own, not the user's state directory.
bench: $(DEV_STAMP) bytecode
	export DITTO_TUI_HOME="$$(mktemp -d)"; \
	$(PY) -m benchmarks.bench_runtime && \
	$(PY) -m benchmarks.bench_mcp && \
	$(PY) -m benchmarks.bench_commands && \
	$(PY) -m benchmarks.bench_journal && \
	$(PY) -m benchmarks.bench_tui && \
	$(PY) -m benchmarks.bench_stream && \
	$(PY) -m benchmarks.bench_durable && \
	$(PY) -m benchmarks.bench_serve && \
	$(PY) -m benchmarks.bench_gateway && \
	$(PY) -m benchmarks.bench_otel
