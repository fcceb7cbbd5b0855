# The two commands a newcomer needs:  make serve   and   make test
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: serve test lint unit bench clean dist browser

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Run the daemon on the embedded SQLite store in ./.cronwheel
serve: $(STAMP)
	$(VENV)/bin/cronwheel serve

# Lint, type-check the pure core, then the whole test suite.
test: $(STAMP) lint browser
	$(PY) -m pytest -q $(PYTEST_ARGS)

# The dashboard's browser tests (tests/browser) drive Debian's chromium through chromium-driver.
# As root with apt-get, install them when missing; otherwise warn loudly and go on: those tests
# are then skipped, or fail where CRONWHEEL_REQUIRE_BROWSER=1 (CI sets it).
BROWSER_WARNING := !!! WARNING: no /usr/bin/chromium + /usr/bin/chromedriver: the dashboard's browser tests will be SKIPPED (or fail under CRONWHEEL_REQUIRE_BROWSER=1) !!!
browser:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium and chromium-driver for the dashboard's browser tests (apt-get, log in /tmp/cronwheel-apt-chromium.log)"; \
	  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver; } \
	      >/tmp/cronwheel-apt-chromium.log 2>&1; then \
	    tail -n 5 /tmp/cronwheel-apt-chromium.log; echo "$(BROWSER_WARNING)"; \
	  fi; \
	else echo "$(BROWSER_WARNING) (not root with apt-get: install chromium and chromium-driver yourself)"; fi

lint: $(STAMP)
	$(VENV)/bin/ruff check cronwheel tests bench
	$(VENV)/bin/mypy cronwheel/core

unit: $(STAMP)
	$(PY) -m pytest -q tests/unit

# The peers (APScheduler 3.x, Procrastinate) live in the bench extra, never in the product's deps.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $(BENCH_STAMP)

# The quick version of every benchmark against the peers (under 5 minutes); docs/benchmarks.md
bench: $(BENCH_STAMP)
	$(PY) bench/run_quick.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info dist

# A wheel and a single-file executable in $(DIST)/. dist/cronwheel.pyz runs anywhere with the
# same Python minor version and platform (its C extensions are this machine's):
#   python3 dist/cronwheel.pyz serve     (or install it as /usr/local/bin/cronwheel)
DIST ?= dist
SHIV ?= $(VENV)/bin/shiv
dist: $(STAMP)
	# build/ keeps files that left the source tree (a renumbered migration would ship twice)
	rm -rf $(DIST) build && mkdir -p $(DIST)
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir $(DIST) .
	$(SHIV) --quiet --reproducible --compressed --console-script cronwheel \
		--python '/usr/bin/env python3' --output-file $(DIST)/cronwheel.pyz $(DIST)/cronwheel-*.whl
