# The two commands a newcomer needs:  make serve   and   make test
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: serve test lint unit bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Run the daemon on the embedded SQLite store in ./.cronwheel
serve: $(STAMP)
	$(VENV)/bin/cronwheel serve

# Lint, type-check the pure core, then the whole test suite.
test: $(STAMP) lint
	$(PY) -m pytest -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check cronwheel tests bench
	$(VENV)/bin/mypy cronwheel/core

unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

bench: $(STAMP)
	$(PY) bench/run_quick.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
