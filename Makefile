# The two commands of the README, plus the checks CI runs.
#
#   make demo    set up .venv, then run the test project's demo (SQLite, real workers)
#   make test    set up .venv, then run the test suite
#   make lint    ruff, ruff format --check, mypy, import-linter
#   make check   the test project's system checks and migration drift
#
# The virtualenv is made with $(PYTHON) (default: python3, 3.11 or newer) and refreshed only
# when pyproject.toml changes (the stamp file below is older than it) or .venv is removed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.anole-installed
PYTEST_ARGS ?=

.PHONY: demo test lint check

demo: $(STAMP)
	$(BIN)/python testproject/manage.py demo

test: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy anole_jobs
	$(BIN)/lint-imports

check: $(STAMP)
	cd testproject && ../$(BIN)/python manage.py check
	cd testproject && ../$(BIN)/python manage.py makemigrations --check --dry-run

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || { \
		$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
		|| { echo "anole_jobs needs Python 3.11 or newer: run make PYTHON=python3.12 ..."; exit 1; }; \
		$(PYTHON) -m venv $(VENV); \
	}
	$(BIN)/python -m pip install --disable-pip-version-check -e ".[dev]"
	@touch $(STAMP)
