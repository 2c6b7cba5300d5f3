# The two commands of the README, plus the checks CI runs and the documentation site.
#
#   make demo    set up .venv, then run the test project's demo (SQLite, real workers)
#   make test    set up .venv, then run the test suite
#   make lint    ruff, ruff format --check, mypy, import-linter
#   make check   the test project's system checks and migration drift
#   make screenshots  regenerate docs/screenshots/ (a live site, a real worker, Chromium at a
#                desktop and a phone width; see tools/screenshots.py)
#   make docs    build the documentation site into site/; open site/index.html in a browser
#                (links work from disk; the search box needs a server:
#                python3 -m http.server -d site 8000, then http://127.0.0.1:8000/)
#
# The virtualenv is made with $(PYTHON) (default: python3, 3.11 or newer) and the package is
# installed into it quietly (pip's output shows only on failure), again whenever
# pyproject.toml changes. Naming PYTHON= for a .venv made with another interpreter rebuilds
# it, and says so. tools/ensure-venv.sh does all of this.

ifeq ($(origin PYTHON),undefined)
PYTHON := python3
PYTHON_CHOSEN := 0
else
PYTHON_CHOSEN := 1
endif
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.anole-installed
DOCS_STAMP := $(VENV)/.anole-docs-installed
PYTEST_ARGS ?=

.PHONY: demo test lint check docs venv screenshots

venv:
	@sh tools/ensure-venv.sh "$(PYTHON)" "$(PYTHON_CHOSEN)" "$(VENV)" "$(STAMP)"

# `make .venv/.anole-installed` is the same as `make venv`, for scripts that name the file
# the set-up leaves behind.
$(STAMP): pyproject.toml
	@sh tools/ensure-venv.sh "$(PYTHON)" "$(PYTHON_CHOSEN)" "$(VENV)" "$(STAMP)"

demo: venv
	$(BIN)/python testproject/manage.py demo

test: venv
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy anole_jobs
	$(BIN)/lint-imports

check: venv
	cd testproject && ../$(BIN)/python manage.py check
	cd testproject && ../$(BIN)/python manage.py makemigrations --check --dry-run

docs: venv
	@if [ ! -f $(DOCS_STAMP) ] || [ requirements-docs.txt -nt $(DOCS_STAMP) ]; then \
		echo "make: installing the docs tools (requirements-docs.txt) into $(VENV)"; \
		$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements-docs.txt \
			> $(VENV)/pip-docs.log 2>&1 || { cat $(VENV)/pip-docs.log; exit 1; }; \
		touch $(DOCS_STAMP); \
	fi
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	@echo "make: the site is in site/; open site/index.html in a browser"

screenshots: venv
	$(BIN)/python -m tools.screenshots
