# LabQueue: `make demo` runs the portal on a lab Slurm cluster; `make test` runs the suite.
# Both work as root on a fresh Debian 12 machine: they install what is missing first.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
TEST_DATABASE_URL ?= postgresql://labqueue:labqueue@127.0.0.1:5432/labqueue

.PHONY: demo test lint prereqs cluster services venv clean-venv

demo: prereqs venv cluster services
	scripts/demo

test: prereqs venv cluster services
	DATABASE_URL=$(TEST_DATABASE_URL) LABQUEUE_REDIS_URL=redis://127.0.0.1:6379/15 LABQUEUE_SECRET_KEY=test-only-secret $(VENV)/bin/pytest $(PYTEST_ARGS)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff format --check .

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

prereqs:
	scripts/prereqs

cluster:
	scripts/labcluster up

services:
	scripts/services up

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

clean-venv:
	rm -rf $(VENV)
