# labapp — `make run` serves the application, `make test` runs the whole suite.
# GNU make. Everything is installed into .venv; nothing touches the system Python.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
MAKEFLAGS += --no-builtin-rules

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test

# `make run BIND=0.0.0.0:8000 WORKERS=4` overrides these (the environment does not).
BIND := 127.0.0.1:5000
WORKERS := 2
# Threads per worker: a client following the change feed (GET /api/changes?wait=30) holds
# one for as long as it waits, so a worker must have others for everyone else.
THREADS := 8
# Seconds gunicorn lets a request run: an export (POST /api/sync/save) of 100,000 entities
# takes 15-25 s on two cores, close to gunicorn's default of 30.
TIMEOUT := 300

# Extra arguments for both pytest passes, e.g. make test PYTEST_ARGS="-x -k filter".
PYTEST_ARGS ?=
# pytest-xdist workers per pass: one per core by default; PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= auto
# The suite's temporary files (SQLite databases, search indexes, uploads, Chromium's
# profiles) go to a folder of their own in this RAM filesystem when it has TEST_TMP_MIN_MIB
# free, else to the system's temporary folder: on a virtual disk each fsync of SQLite and
# each removal of an index cost milliseconds. The folder is removed when the run ends.
TEST_TMP_PARENT ?= /dev/shm
TEST_TMP_MIN_MIB ?= 4096
# The PostgreSQL pass runs against this server; the suite reads it from the environment.
LABAPP_TEST_POSTGRES_URL ?= postgresql+psycopg://postgres@127.0.0.1:5432/test
ifeq ($(strip $(LABAPP_TEST_POSTGRES_URL)),)
override LABAPP_TEST_POSTGRES_URL := postgresql+psycopg://postgres@127.0.0.1:5432/test
endif
export LABAPP_TEST_POSTGRES_URL

# Exit 0 when the PostgreSQL server at LABAPP_TEST_POSTGRES_URL answers. The database
# named in the URL need not exist yet: the maintenance database `postgres` counts too.
define PG_PROBE_PY
import os, re, sys
import psycopg
url = re.sub(r"^postgres(ql)?(\+\w+)?://", "postgresql://", os.environ["LABAPP_TEST_POSTGRES_URL"])
errors = []
for extra in ({}, {"dbname": "postgres"}):
    try:
        psycopg.connect(url, connect_timeout=3, **extra).close()
        sys.exit(0)
    except psycopg.Error as exc:
        errors.append(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
print(errors[0])
sys.exit(1)
endef
export PG_PROBE_PY

.PHONY: help venv run lint test bench clean distclean

help: ## list the targets
	@echo "labapp — make targets:"
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo "Variables: PYTHON=$(PYTHON)  PYTEST_ARGS=...  PYTEST_WORKERS=$(PYTEST_WORKERS)  LABAPP_TEST_POSTGRES_URL=...  BIND=$(BIND)  WORKERS=$(WORKERS)  THREADS=$(THREADS)  TIMEOUT=$(TIMEOUT)"

venv: $(TEST_STAMP) ## create .venv and install runtime and test dependencies

run: $(RUN_STAMP) ## install runtime deps, create/upgrade the database, serve with gunicorn on BIND beside the worker (search index, tallies, statistics)
	$(BIN)/flask --app labapp init
	$(BIN)/flask --app labapp worker & trap 'kill $$! 2>/dev/null; wait' EXIT; \
	$(BIN)/gunicorn -c python:labapp.serving --bind $(BIND) --workers $(WORKERS) \
	  --threads $(THREADS) --timeout $(TIMEOUT) 'labapp:create_app()'

lint: $(TEST_STAMP) ## ruff (pyflakes, pycodestyle, isort, bugbear), the import floors (lint-imports), mypy --strict
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy

test: lint ## lint, then run the suite on SQLite, then its database tests (marked db) on PostgreSQL (skipped if unreachable, unless CI=true); prints each pass's time
	@shown_url=$$(sed -E 's#(://[^:/@]*):[^@]*@#\1:***@#' <<<"$$LABAPP_TEST_POSTGRES_URL"); \
	if reason=$$($(BIN)/python -c "$$PG_PROBE_PY" 2>&1); then pg=yes; else \
	  pg=no; \
	  if [ "$${CI:-}" = true ]; then \
	    echo "*** PostgreSQL not reachable at $$shown_url: CI=true requires the PostgreSQL pass, FAILING ***" >&2; \
	    echo "    ($$reason)" >&2; \
	    exit 1; \
	  fi; \
	  echo "*** PostgreSQL not reachable at $$shown_url: the PostgreSQL pass will be SKIPPED ***"; \
	  echo "    ($$reason)"; \
	fi; \
	free_mib=$$(df -Pm "$(TEST_TMP_PARENT)" 2>/dev/null | awk 'NR == 2 {print $$4}'); \
	if [ -w "$(TEST_TMP_PARENT)" ] && [ "$${free_mib:-0}" -ge "$(TEST_TMP_MIN_MIB)" ]; then \
	  TMPDIR=$$(mktemp -d "$(TEST_TMP_PARENT)/labapp-test.XXXXXX"); export TMPDIR; \
	  trap 'rm -rf "$$TMPDIR"' EXIT; \
	  echo "temporary files: $$TMPDIR ($${free_mib} MiB free)"; \
	else \
	  echo "temporary files: the system's temporary folder ($(TEST_TMP_PARENT): $${free_mib:-?} MiB free, below $(TEST_TMP_MIN_MIB) or not writable)"; \
	fi; \
	sqlite_rc=0; pg_rc=0; pg_took=-; \
	echo "=== pass 1/2: SQLite (LABAPP_TEST_BACKEND=sqlite, browser tests included) ==="; \
	started=$$SECONDS; \
	LABAPP_TEST_BACKEND=sqlite $(BIN)/python -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS) || sqlite_rc=$$?; \
	sqlite_took=$$((SECONDS - started)); \
	if [ "$$sqlite_rc" -eq 0 ]; then verdict=passed; else verdict=FAILED; fi; \
	echo "=== pass 1/2: SQLite $$verdict in $${sqlite_took}s ==="; \
	if [ "$$pg" = yes ]; then \
	  echo "=== pass 2/2: PostgreSQL (LABAPP_TEST_BACKEND=postgresql at $$shown_url, the tests marked db, browser tests excluded) ==="; \
	  started=$$SECONDS; \
	  LABAPP_TEST_BACKEND=postgresql $(BIN)/python -m pytest -n $(PYTEST_WORKERS) -m "db and not browser" $(PYTEST_ARGS) || pg_rc=$$?; \
	  pg_took=$$((SECONDS - started)); \
	  if [ "$$pg_rc" -eq 0 ]; then verdict=passed; else verdict=FAILED; fi; \
	  echo "=== pass 2/2: PostgreSQL $$verdict in $${pg_took}s ==="; \
	else \
	  echo "*** PostgreSQL not reachable at $$shown_url: SKIPPED the PostgreSQL pass ***"; \
	fi; \
	echo "=== both passes took $$((sqlite_took + $${pg_took/-/0}))s (SQLite $${sqlite_took}s, then PostgreSQL $${pg_took}s) ==="; \
	[ "$$sqlite_rc" -eq 0 ] && [ "$$pg_rc" -eq 0 ]

bench: $(TEST_STAMP) ## run the benchmarks in bench/
	@if [ -f bench/__main__.py ]; then $(BIN)/python -m bench; else echo "no benchmarks yet"; fi

clean: ## forget installed-dependency stamps; remove caches and build output (keeps .venv and instance/)
	rm -f $(RUN_STAMP) $(TEST_STAMP)
	rm -rf .pytest_cache build *.egg-info
	find . \( -path ./.venv -o -path ./instance -o -path ./.git \) -prune -o \
	  -type d -name __pycache__ -print0 | xargs -0 rm -rf

distclean: clean ## also remove .venv entirely
	rm -rf $(VENV)

# --- the virtual environment -------------------------------------------------------------
# Two stamps so `make run` installs only what production needs. Each is rebuilt when
# pyproject.toml changes; the .venv itself is created only when missing.

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) install -e .
	touch $@

# The test install is a superset of the runtime one, so it refreshes both stamps.
$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[test]'
	touch $@ $(RUN_STAMP)
