# The two commands a newcomer needs:  make serve   and   make test
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: serve test lint unit bench clean dist

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
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info dist

# A wheel and a single-file executable in $(DIST)/. dist/cronwheel.pyz runs anywhere with the
# same Python minor version and platform (its C extensions are this machine's):
#   python3 dist/cronwheel.pyz serve     (or install it as /usr/local/bin/cronwheel)
DIST ?= dist
SHIV ?= $(VENV)/bin/shiv
dist: $(STAMP)
	rm -rf $(DIST) && mkdir -p $(DIST)
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir $(DIST) .
	$(SHIV) --quiet --reproducible --compressed --console-script cronwheel \
		--python '/usr/bin/env python3' --output-file $(DIST)/cronwheel.pyz $(DIST)/cronwheel-*.whl
