# Two commands matter: `make run` (the embedded service) and `make test` (lint, types, tests).
# Both bootstrap .venv from pyproject.toml pinned by constraints.txt, once.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PURE   := $(wildcard oozie oozieclient datasets/timeline coordinators/plan bundles/definitions batches/definitions kernel/time_axis.py)

.PHONY: run test lint typecheck pytest install lock clean

run: $(STAMP)
	$(PY) manage.py up

test: $(STAMP) lint typecheck pytest

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev,embedded]'
	@touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(if $(PURE),$(VENV)/bin/mypy --strict --no-incremental --config-file /dev/null --ignore-missing-imports $(PURE))
	$(VENV)/bin/mypy .

pytest: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# Refresh the pins after changing dependencies in pyproject.toml.
lock: $(STAMP)
	$(PY) -m pip install --quiet --upgrade -e '.[dev,embedded]'
	$(PY) -m pip freeze --exclude-editable | grep -v '^-e' > constraints.txt

clean:
	rm -rf $(VENV) var .mypy_cache .pytest_cache .ruff_cache
