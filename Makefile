# trainops: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TRAINOPS := $(VENV)/bin/trainops
# DeepSpeed ships as an sdist that must build against the torch already installed.
DEEPSPEED_VERSION := 0.19.8
# The browser tests (tests/report/test_browser.py): the real mermaid renders the PR comment's
# chart in Debian's headless Chromium, which also loads the HTML report.
MERMAID_VERSION := 11.12.2
TOOLS := .tools
PYTEST_ARGS ?=
# Open MPI from the distribution's packages: the trainer's mpirun test and run-local's MPIJob;
# OpenSSH: the MPI image's sshd and ssh configs run for real (tests/trainer/test_mpi_image.py).
MPI_PACKAGES := openmpi-bin libopenmpi-dev openssh-server openssh-client
# Prometheus and promtool from the distribution: `promtool check/test rules` on the rendered
# alerts, and the real server the metrics tests scrape with.
PROMETHEUS_PACKAGES := prometheus

.PHONY: setup mpi prometheus browser-tools demo sandbox test test-fast lint format render check bench bench-suite bench-trainer mutation clean

setup: $(VENV)/.installed mpi prometheus browser-tools

# Installed with apt-get as root (CI) or through passwordless sudo (GitHub's runners); else a
# note: the tests that need mpirun skip on a developer machine and fail under CI=true.
mpi:
	@{ command -v mpirun && command -v ssh && PATH="$$PATH:/usr/sbin" command -v sshd; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; \
	  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	  else sudo=none; fi; \
	  if [ "$$sudo" != none ] && command -v apt-get >/dev/null 2>&1; then \
	    $$sudo apt-get update -q && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(MPI_PACKAGES); \
	  else echo "note: no mpirun or sshd: install $(MPI_PACKAGES) for the MPI tests"; fi; }

# As `mpi`: apt as root or through passwordless sudo, else a note (the promtool tests skip on a
# developer machine and fail under CI=true).
prometheus:
	@command -v promtool >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then sudo=""; \
	  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	  else sudo=none; fi; \
	  if [ "$$sudo" != none ] && command -v apt-get >/dev/null 2>&1; then \
	    $$sudo apt-get update -q && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(PROMETHEUS_PACKAGES); \
	  else echo "note: no promtool: install Prometheus ($(PROMETHEUS_PACKAGES)) for the alert tests"; fi; }

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and exact: this version has a CPU wheel on the build machine.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[trainer,dev]'
	DS_BUILD_OPS=0 $(PY) -m pip install --quiet --no-build-isolation deepspeed==$(DEEPSPEED_VERSION)
	touch $@

## browser-tools: headless Chromium (apt, when missing and run as root) and mermaid (npm, pinned, into .tools/).
browser-tools:
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || command -v google-chrome >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } || echo "install chromium (apt-get install chromium) for the browser tests"
	[ -f $(TOOLS)/mermaid/node_modules/mermaid/dist/mermaid.min.js ] || npm install --no-audit --no-fund --prefix $(TOOLS)/mermaid mermaid@$(MERMAID_VERSION)

## sandbox: a local API server holding a recorded state of CLUSTER (default cloud-h100), to try
## status, explain and live-diff without a cluster (docs/cluster.md, "Without a cluster").
CLUSTER ?= cloud-h100
sandbox: $(VENV)/.installed
	$(TRAINOPS) sandbox --cluster $(CLUSTER) --kubeconfig .sandbox-kubeconfig

## demo: set up, render the shipped examples, build every overlay with kustomize, print jobs x clusters.
demo: setup
	$(TRAINOPS) render
	$(TRAINOPS) build

render: setup
	$(TRAINOPS) render

check: setup
	$(TRAINOPS) render --check

lint: setup
	$(PY) -m ruff check trainops trainer tests
	$(PY) -m ruff format --check trainops trainer tests
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

format: setup
	$(PY) -m ruff check --fix trainops trainer tests
	$(PY) -m ruff format trainops trainer tests

## test: set up, lint, type-check, then the whole pytest suite, on all cores (pytest-xdist: the
## suite is xdist-safe: per-test tmp paths, free ports, torchrun --standalone, DeepSpeed's op
## builds behind their own lock), with the 20 slowest tests listed (issue 39: under 8 minutes
## on two cores; bench/suite.py measures it). `--dist worksteal`: a worker that runs out of
## tests takes half of the other's queue; xdist's default hands out fixed chunks, and one
## worker then ran a minute of trainer tests alone while the other idled (437 -> 393 s).
test: lint
	$(PY) -m pytest -n auto --dist worksteal --durations=20 $(PYTEST_ARGS)

## test-fast: the developer loop: every test not marked slow, on all cores (no lint).
test-fast: setup
	$(PY) -m pytest -q -m "not slow" -n auto --dist worksteal $(PYTEST_ARGS)

## bench: --manifests and the shipped repository (bench/results/validate.json), then the fleet
## table of docs/validate.md at 500 and 5,000 jobs, each side by side with its ceiling
## (bench/results/changed.json, bench/results/fleet-table.md; about half an hour on two cores).
bench: setup
	$(PY) -m bench.validate
	$(PY) -m bench.changed --quick

## bench-suite: time `make test-fast` and `make test` as CI runs them (bench/results/suite.json).
bench-suite: setup
	$(PY) -m bench.suite

bench-trainer: setup
	$(PY) -m bench.trainer

## mutation: mutmut over render/, render/gitops/ and rules/, each against its own tests (slow, not
## part of `make test`; over an hour on 2 shared cores): bench/results/mutation.json, scores in docs/development.md.
mutation: setup
	$(PY) -m bench.mutation

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
