# LabQueue: `make demo` runs the portal on a lab Slurm cluster; `make test` runs the suite.
# Both work as root on a fresh Debian 12 machine: they install what is missing first.

# Debian's own Python (3.11 on Debian 12, 3.13 on Debian 13): the portal's service account must be able
# to run the virtualenv's interpreter, so it cannot live under a private home such as root's.
PYTHON ?= /usr/bin/python3
VENV := .venv
PY := $(VENV)/bin/python
TEST_DATABASE_URL ?= postgresql://labqueue:labqueue@127.0.0.1:5432/labqueue

TEST_REDIS_URL ?= redis://127.0.0.1:6379/15

TEST_ENV := DATABASE_URL=$(TEST_DATABASE_URL) LABQUEUE_REDIS_URL=$(TEST_REDIS_URL) LABQUEUE_SECRET_KEY=test-only-secret
# Coverage floors (branch coverage), enforced when the whole suite runs: 90% on the app,
# 95% on the critical paths below.
CRITICAL := jobs/services.py,jobs/lifecycle.py,jobs/dispatch.py,jobs/models.py,jobs/workdir.py,jobs/staging.py,jobs/files.py,jobs/uploads.py,slurm/*,courses/scripting.py,courses/policy.py,courses/roster.py,clusterpolicy/associations.py,clusterpolicy/plan.py,clusterpolicy/labs.py,portal/auth.py,portal/sso.py,portal/identity.py,courses/patterns.py,jobs/enqueue.py,reports/queries.py,reports/reconciliation.py
ifeq ($(strip $(PYTEST_ARGS)),)
COVERAGE := --cov --cov-report=term --cov-fail-under=90
COVERAGE_CRITICAL := $(VENV)/bin/coverage report --include='$(CRITICAL)' --fail-under=95
else
COVERAGE :=
COVERAGE_CRITICAL := @echo "coverage floors: checked only when the whole suite runs"
endif

.PHONY: demo test test-suite test-slurm24 lint mutate mutate-pure mutate-slurm24 mutate-nocluster prereqs cluster services venv clean-venv slurm24 slurm24-down

# DEMO_ARGS=--debug turns on Django's debug pages (developers only: they show settings and code).
DEMO_ARGS ?=
demo: prereqs venv cluster services
	scripts/demo $(DEMO_ARGS)

# The whole suite against the lab cluster (Slurm 22.05) and, side by side with it, the Slurm-facing tests
# against the Slurm 24.11 cluster (test-slurm24, with a database and a Redis database of its own): the two share
# no cluster and wait on Slurm more than on the processors, so the pair takes about as long as the whole suite
# alone. With PYTEST_ARGS (a subset), the suite only.
SIDE_DATABASE_URL := postgresql://labqueue:labqueue@127.0.0.1:5432/labqueue_slurm24
SIDE_REDIS_URL := redis://127.0.0.1:6379/13
ifeq ($(strip $(PYTEST_ARGS)),)
test: prereqs venv cluster services slurm24 lint
	scripts/side-by-side test-slurm24.log \
		$(MAKE) --no-print-directory -o prereqs -o venv -o services -o slurm24 test-slurm24 \
			TEST_DATABASE_URL=$(SIDE_DATABASE_URL) TEST_REDIS_URL=$(SIDE_REDIS_URL) \
		-- $(MAKE) --no-print-directory test-suite
else
test: prereqs venv cluster services lint
	$(MAKE) --no-print-directory test-suite
endif

# The whole suite (or PYTEST_ARGS) against the lab cluster only, once `make test`'s set-up is done.
test-suite:
	$(TEST_ENV) $(VENV)/bin/pytest $(COVERAGE) $(PYTEST_ARGS)
	$(COVERAGE_CRITICAL)

# The Slurm-facing tests against the Slurm 24.11 cluster of scripts/slurm24 (README, "Slurm versions"): the
# adapter and the tests' own checks run that cluster's client tools through scripts/slurm24-tool.
SLURM24_ENV := LABQUEUE_SLURM_BIN_DIR=/usr/local/libexec/labqueue-slurm24/bin \
	LABQUEUE_LAB_SLURM_CONF=/var/lib/labqueue/trixie/var/lib/labqueue/labcluster/etc/slurm.conf \
	LABQUEUE_LAB_CONTROL="scripts/slurm24 labcluster"
SLURM24_TESTS ?= tests/slurm tests/jobs tests/clusterpolicy tests/reports/test_reports_ingest.py \
	tests/reports/test_reports_reconciliation.py tests/ops/test_health.py

test-slurm24: prereqs venv services slurm24
	$(TEST_ENV) $(SLURM24_ENV) $(VENV)/bin/pytest $(SLURM24_TESTS) $(PYTEST_ARGS)

# Mutation testing of the critical paths (slow: see README); MUTANTS='jobs.workdir*' narrows it.
mutate: prereqs venv cluster services
	$(TEST_ENV) scripts/mutate $(MUTANTS)

mutate-pure: venv
	$(TEST_ENV) scripts/mutate --pure $(MUTANTS)

# Mutation testing beside `make mutate`, doubling what one run gets through: against the Slurm 24.11 cluster, with
# a database and broker of its own and only the tests `make test-slurm24` runs, in .mutate-slurm24/.
MUTATE24_ENV := DATABASE_URL=postgresql://labqueue:labqueue@127.0.0.1:5432/labqueue_mutate24 \
	LABQUEUE_REDIS_URL=redis://127.0.0.1:6379/12 LABQUEUE_TESTS_ONLY="$(SLURM24_TESTS)"
mutate-slurm24: prereqs venv services slurm24
	$(TEST_ENV) $(SLURM24_ENV) $(MUTATE24_ENV) scripts/mutate --slurm24 $(MUTANTS)

# Beside `make mutate` too: the tests that leave the lab cluster alone, with a database and broker of their own.
MUTATENC_ENV := DATABASE_URL=postgresql://labqueue:labqueue@127.0.0.1:5432/labqueue_mutatenc \
	LABQUEUE_REDIS_URL=redis://127.0.0.1:6379/11
mutate-nocluster: prereqs venv services
	$(TEST_ENV) $(MUTATENC_ENV) scripts/mutate --no-cluster $(MUTANTS)

# The apps are the import-linter root packages (pyproject.toml); `lint` fails on a function of theirs worse than
# radon grade C (tests/test_code_shape.py fails on one over 50 lines).
APPS = $(shell $(PY) -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['tool']['importlinter']['root_packages'])")
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/xenon --max-absolute C --ignore migrations $(APPS)

prereqs:
	scripts/prereqs

cluster:
	scripts/labcluster up

services:
	scripts/services up

# A second lab cluster with Slurm 24.11 in a Debian 13 root beside the host's (README, "Slurm versions").
slurm24:
	scripts/slurm24 up

slurm24-down:
	scripts/slurm24 down

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-nodeps.txt
	grep -qx "home = $(patsubst %/,%,$(dir $(PYTHON)))" $(VENV)/pyvenv.cfg 2>/dev/null || { rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	touch $@

clean-venv:
	rm -rf $(VENV)
