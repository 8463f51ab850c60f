# The two set-up commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
ASSAY_HOME ?= $(HOME)/.assay
# The local cluster's API port: `make run PORT=9000` when 8080 is taken. Unset, `assay up`
# keeps a cluster already up wherever it listens, else starts one where the last `assay up`
# did (8080 the first time).
PORT ?=
export ASSAY_HOME

.PHONY: install install-dev system-deps run test lint typecheck unit integration bench bench-peers \
	down clean webui webui-types webui-check test-tools det-client dist docs images test-deps \
	prebuilt

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# With JupyterLab: `make run`'s agent runs tasks with this Python, so notebooks work there.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[examples,notebook]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,examples]'
	touch $@ $(VENV)/.installed $(VENV)/.installed-docs

# What the docs site needs, without the test suite's frameworks (torch, TensorFlow...).
$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[docs]'
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

## make webui: build the web UI (web/) into the package, where the master serves it at /.
webui: web/node_modules/.installed
	cd web && npm run build

web/node_modules/.installed: web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	touch $@

# The UI's TypeScript types, from the OpenAPI document the master's code makes (no server).
webui-types: install web/node_modules/.installed
	$(BIN)/python -c 'from assay.api import write_openapi; write_openapi("web/openapi.json")'
	cd web && npm run gen:api

## make webui-check: fail when web/src/api/schema.d.ts no longer matches the API.
webui-check: install web/node_modules/.installed
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(BIN)/python -c 'import sys; from assay.api import write_openapi; write_openapi(sys.argv[1])' \
	  "$$tmp/openapi.json" && \
	web/node_modules/.bin/openapi-typescript "$$tmp/openapi.json" -o "$$tmp/schema.d.ts" \
	  >/dev/null 2>&1 && \
	{ cmp -s "$$tmp/schema.d.ts" web/src/api/schema.d.ts || \
	  { echo "web/src/api/schema.d.ts is stale: run make webui-types and commit it"; exit 1; }; }

## make dist: build the web UI, then an sdist and a wheel built from that sdist (in dist/), both
## carrying the UI and the commit they were built from.
dist: install webui
	$(BIN)/python -m pip install -q "build>=1.2"
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

## make images: the master's and the agent's container images (podman, else docker), from the
## wheel `make dist` builds and every wheel it needs (dist/wheelhouse), so the builds reach no
## network; the CUDA agent's wheelhouse is for its base's Python 3.12. BASE=IMAGE builds the
## master and the agent on another base with Python 3.11.
ENGINE ?= $(shell command -v podman || command -v docker)
VERSION = $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' src/assay/__init__.py)
images: dist
	$(BIN)/pip download --quiet --only-binary=:all: --dest dist/wheelhouse pip \
	  "$$(ls dist/assay-*.whl)[kubernetes]"
	$(BIN)/pip download --quiet --only-binary=:all: --dest dist/wheelhouse-cp312 \
	  --python-version 3.12 --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
	  pip "$$(ls dist/assay-*.whl)"
	$(ENGINE) build -f deploy/images/master.Containerfile $(if $(BASE),--build-arg BASE=$(BASE)) \
	  -t assay-master:$(VERSION) dist
	$(ENGINE) build -f deploy/images/agent.Containerfile $(if $(BASE),--build-arg BASE=$(BASE)) \
	  -t assay-agent:$(VERSION) dist
	$(ENGINE) build -f deploy/images/agent-cuda.Containerfile -t assay-agent-cuda:$(VERSION) dist

## make docs: the documentation site (MkDocs, Material theme) in site/; a broken link fails it.
# Never --quiet: it drops the warnings --strict counts (a link to a missing anchor is one).
docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

## make run: install, build the UI, start a single-machine cluster, run the digits example.
run: install webui
	$(BIN)/assay up $(if $(PORT),--port $(PORT))
	$(BIN)/assay experiment create examples/digits/random.yaml examples/digits --follow

down:
	$(BIN)/assay down

# Packages the suite needs from the system: tmux drives a terminal for the live-display test;
# the web UI's tests drive Debian's Chromium.
# tmux and chromium for the CLI's and the web UI's tests; podman (with runc and catatonit, its
# --init) and debootstrap, which builds the image the container tests run, for those; Slurm
# (slurm-wlm, with munge for its authentication) for the Slurm pool's tests, which start a
# one-node cluster of their own; OpenSSH (client and server) for the shells' tests.
system-deps:
	@{ command -v tmux && command -v chromium && command -v podman && command -v runc \
	   && command -v debootstrap && [ -x /usr/libexec/podman/catatonit ] \
	   && command -v slurmctld && command -v slurmd && command -v munged \
	   && command -v ssh && command -v ssh-keygen && [ -x /usr/sbin/sshd ]; } >/dev/null 2>&1 || { \
	  sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	  $$sudo apt-get update -q && \
	  $$sudo apt-get install -y -q tmux chromium podman runc catatonit debootstrap \
	    slurm-wlm munge openssh-client openssh-server; }

# Servers the tests start on loopback that come from npm (Azurite, for Azure Blob Storage).
test-tools: tests/tools/node_modules/.installed

tests/tools/node_modules/.installed: tests/tools/package-lock.json
	cd tests/tools && npm ci --no-audit --no-fund
	touch $@

# Determined's own client (the `det` CLI and SDK), in a virtual environment of its own: it pins
# requests and others that would change assay's. tests/integration/test_det_cli.py drives it.
DET_VENV := .venv-det
DET_VERSION := 0.38.1

det-client: $(DET_VENV)/.installed-$(DET_VERSION)

# What the suite needs. The installs first, at once: each is mostly waiting on downloads (pip,
# apt, npm) and none touches another's files; then what is built from them.
TEST_INSTALLS := install-dev system-deps web/node_modules/.installed test-tools det-client
TEST_BUILDS := webui webui-check docs
test-deps:
	$(MAKE) -j5 $(TEST_INSTALLS)
	$(MAKE) -j3 $(TEST_BUILDS)

$(DET_VENV)/.installed-$(DET_VERSION):
	$(PYTHON) -m venv $(DET_VENV)
	$(DET_VENV)/bin/python -m pip install -q 'determined==$(DET_VERSION)'
	touch $@

## make test: install what the suite needs, then lint, type-check and run every test.
# The builds, the checks and the prebuilt op run at once after the installs: each is one
# process, two cores take two (measured: 46 s of mypy beside 41 s of the op's compile).
test:
	$(MAKE) -j5 $(TEST_INSTALLS)
	$(MAKE) -j6 $(TEST_BUILDS) lint typecheck prebuilt
	@# Three test files at once on two cores: much of an integration test is waiting on the
	@# processes it started (measured: 14% sooner than two on the same files; four was slower).
	@# Files go in the order tests/conftest.py gives them, longest first; xdist's own order
	@# (most tests first) put the long one-test files, the images and B13, last.
	$(BIN)/pytest -n 3 --dist loadfile --no-loadscope-reorder

lint: install-dev
	$(BIN)/ruff check src tests benchmarks examples docs/_hooks hatch_build.py
	$(BIN)/ruff format --check src tests benchmarks examples docs/_hooks hatch_build.py

typecheck: install-dev
	$(BIN)/mypy

# What every process of the suite would otherwise build for itself.
prebuilt: install-dev
	@# Compiled once here: where PYTHONDONTWRITEBYTECODE is set, every master, agent, command
	@# and trial process the suite starts would compile the sources again (0.5 s a master).
	$(BIN)/python -m compileall -q src > /dev/null
	@# DeepSpeed's CPU accelerator compiles its shared-memory op (g++ over torch's headers, one
	@# to three minutes) the first time a process uses it: built here once, with the ninja trials
	@# use (the venv's: a build by the system's ninja looks stale to it, and is done again).
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -c 'from deepspeed.accelerator import \
	  get_accelerator; get_accelerator().create_op_builder("ShareMemCommBuilder").load()' \
	  > /dev/null 2>&1

unit: install-dev
	$(BIN)/pytest tests/unit

integration: install-dev
	$(BIN)/pytest tests/integration

## make bench: every benchmark of assay alone at full size; each rewrites its section of
## benchmarks/RESULTS.md. B7's browser half, last, needs Chromium (`make system-deps`).
bench: install-dev
	$(BIN)/pip install -q -e '.[dev,examples,bench]'
	$(BIN)/python benchmarks/runtime/bench_b2_b4.py
	$(BIN)/python benchmarks/runtime/bench_b8.py
	$(BIN)/python benchmarks/interactive/bench_b14_notebook.py
	$(BIN)/python benchmarks/scheduler/bench_b6.py
	$(BIN)/python benchmarks/searchers/b5_suggest_cost.py
	$(BIN)/python benchmarks/searchers/b9_search_quality.py
	$(BIN)/python benchmarks/cli/bench_b11.py
	$(BIN)/python benchmarks/api/bench_b7.py
	$(BIN)/python benchmarks/runtime/bench_b10.py
	$(BIN)/python benchmarks/reliability/run_reliability.py
	$(BIN)/python benchmarks/api/bench_b7_ui.py

## make bench-peers: B1 and B3 for assay, Optuna, Ray Tune and NNI in one run (each peer in a
## virtual environment of its own, made under benchmarks/peers/.venvs/), then B9's early
## stopping beside Optuna's pruners and Ray Tune's ASHA.
bench-peers: install-dev
	$(BIN)/python benchmarks/peers/bench_peers.py
	$(BIN)/python benchmarks/searchers/b9_peers.py

# Also the images the container tests keep for the next run (README: what make test leaves).
clean:
	rm -rf $(VENV) $(DET_VENV) .pytest_cache .mypy_cache .ruff_cache dist site
	@if command -v podman >/dev/null 2>&1; then \
	  podman rmi --ignore localhost/assay-test-sshd:1 localhost/assay-test-python:1 >/dev/null; fi
