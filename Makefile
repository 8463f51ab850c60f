# The two set-up commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
ASSAY_HOME ?= $(HOME)/.assay
# The local cluster's API port: `make run PORT=9000` when 8080 is taken. Unset, `assay up`
# keeps a cluster already up wherever it listens, else starts one on 8080.
PORT ?=
export ASSAY_HOME

.PHONY: install install-dev system-deps run test lint typecheck unit integration bench down clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[examples]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,examples]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

## make run: install, start a single-machine cluster, run the digits example to the end.
run: install
	$(BIN)/assay up $(if $(PORT),--port $(PORT))
	$(BIN)/assay experiment create examples/digits/random.yaml examples/digits --follow

down:
	$(BIN)/assay down

# Packages the suite needs from the system: tmux drives a terminal for the live-display test.
system-deps:
	@command -v tmux >/dev/null 2>&1 || { \
	  sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	  $$sudo apt-get update -q && $$sudo apt-get install -y -q tmux; }

## make test: install what the suite needs, then lint, type-check and run every test.
test: install-dev system-deps
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/mypy
	$(BIN)/pytest

unit: install-dev
	$(BIN)/pytest tests/unit

integration: install-dev
	$(BIN)/pytest tests/integration

## make bench: every benchmark at full size; each rewrites its section of benchmarks/RESULTS.md.
bench: install-dev
	$(BIN)/pip install -q -e '.[dev,examples,bench]'
	$(BIN)/python benchmarks/runtime/bench_b2_b4.py
	$(BIN)/python benchmarks/scheduler/bench_b6.py
	$(BIN)/python benchmarks/searchers/b5_suggest_cost.py
	$(BIN)/python benchmarks/searchers/b9_search_quality.py
	$(BIN)/python benchmarks/cli/bench_b11.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
