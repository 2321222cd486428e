# trainops: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TRAINOPS := $(VENV)/bin/trainops
# DeepSpeed ships as an sdist that must build against the torch already installed.
DEEPSPEED_VERSION := 0.19.8
PYTEST_ARGS ?=

.PHONY: setup demo test test-fast lint format render check bench bench-trainer mutation clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and exact: this version has a CPU wheel on the build machine.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[trainer,dev]'
	DS_BUILD_OPS=0 $(PY) -m pip install --quiet --no-build-isolation deepspeed==$(DEEPSPEED_VERSION)
	touch $@

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

## test: set up, lint, type-check, then the whole pytest suite.
test: lint
	$(PY) -m pytest $(PYTEST_ARGS)

## test-fast: the developer loop: every test not marked slow, on all cores (no lint).
test-fast: setup
	$(PY) -m pytest -q -m "not slow" -n auto $(PYTEST_ARGS)

bench: setup
	$(PY) -m bench.validate

bench-trainer: setup
	$(PY) -m bench.trainer

## mutation: mutmut over render/, render/gitops/ and rules/, each against its own tests (slow, not
## part of `make test`; over an hour on 2 shared cores): bench/results/mutation.json, scores in docs/development.md.
mutation: setup
	$(PY) -m bench.mutation

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
