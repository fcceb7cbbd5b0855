# The two commands a newcomer needs:  make serve   and   make test
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: serve test lint unit bench clean dist browser promtool chaostools install uninstall openapi

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Run the daemon on the embedded SQLite store in ./.cronwheel
serve: $(STAMP)
	$(VENV)/bin/cronwheel serve

# Lint, check the layers, type-check the package, then the whole test suite, one pytest worker
# per core (most tests wait on real daemons; worksteal lets an idle worker take a busy one's
# queue). PYTEST_JOBS=0 runs it in one process. The 25 slowest tests are listed at the end: the
# suite is kept well under 15 minutes, and they are where a minute comes back from.
PYTEST_JOBS ?= auto
test: $(STAMP) lint browser promtool chaostools
	$(PY) -m pytest -q -n $(PYTEST_JOBS) --dist worksteal --durations=25 $(PYTEST_ARGS)

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

# The alert rules in docs/operations.md and /metrics are checked by promtool, from Debian's
# prometheus package: installed like chromium above; missing, those checks are skipped (or fail
# where CRONWHEEL_REQUIRE_PROMTOOL=1, as in CI).
PROMTOOL_WARNING := !!! WARNING: no promtool: the alert-rule and metrics lint tests will be SKIPPED (or fail under CRONWHEEL_REQUIRE_PROMTOOL=1) !!!
promtool:
	@if command -v promtool >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing prometheus (for promtool) with apt-get, log in /tmp/cronwheel-apt-prometheus.log"; \
	  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; } \
	      >/tmp/cronwheel-apt-prometheus.log 2>&1; then \
	    tail -n 5 /tmp/cronwheel-apt-prometheus.log; echo "$(PROMTOOL_WARNING)"; \
	  fi; \
	else echo "$(PROMTOOL_WARNING) (not root with apt-get: install Debian's prometheus package yourself)"; fi

# Two cluster chaos tests need OS tools: a node's clock skewed by libfaketime (Debian's
# faketime) and a network cut by iptables (and root). Installed like chromium above; missing,
# those two tests are skipped loudly.
CHAOS_WARNING := !!! WARNING: no faketime/iptables: the clock-skew and network-cut chaos tests will be SKIPPED !!!
chaostools:
	@if [ -n "$$(ls /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1 2>/dev/null)" ] \
	    && command -v iptables >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing faketime and iptables for the cluster chaos tests (apt-get, log in /tmp/cronwheel-apt-chaos.log)"; \
	  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends faketime iptables; } \
	      >/tmp/cronwheel-apt-chaos.log 2>&1; then \
	    tail -n 5 /tmp/cronwheel-apt-chaos.log; echo "$(CHAOS_WARNING)"; \
	  fi; \
	else echo "$(CHAOS_WARNING) (not root with apt-get: install Debian's faketime and iptables yourself)"; fi

# ruff (with its ASYNC rules), the layers (import-linter contracts in pyproject.toml), and
# mypy --strict over the whole package
lint: $(STAMP)
	$(VENV)/bin/ruff check cronwheel tests bench
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy cronwheel

# The OpenAPI document is generated (cronwheel/api/openapi.py): never edit openapi.json by hand
openapi: $(STAMP)
	$(PY) -m cronwheel.api.openapi > cronwheel/api/openapi.json.new
	mv cronwheel/api/openapi.json.new cronwheel/api/openapi.json

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
# It carries the postgres extra (psycopg with its binary wheel, libpq inside) so that an
# installed node can use a PostgreSQL store; shiv unpacks it, so compiled wheels load.
# Its CLI reads $(SYSCONFDIR)/cronwheel/cronwheel.toml by default: with a SYSCONFDIR other than
# /etc, a shiv preamble (run before the command line is read) says where.
DIST ?= dist
SHIV ?= $(VENV)/bin/shiv
PREAMBLE = $(if $(filter /etc,$(SYSCONFDIR)),,$(DIST)/sysconfdir.py)
dist: $(STAMP)
	# build/ keeps files that left the source tree (a renumbered migration would ship twice)
	rm -rf $(DIST) build && mkdir -p $(DIST)
	$(PY) -m pip wheel --quiet --no-deps --wheel-dir $(DIST) .
	$(if $(PREAMBLE),$(PY) -c 'import sys; print("import pathlib\nimport cronwheel.cli.config as c\n" \
		"c.DEFAULT_CONFIG = pathlib.Path(%r)  # make dist SYSCONFDIR=" % sys.argv[1])' '$(CONFIG)' > $(PREAMBLE))
	$(SHIV) --quiet --reproducible --compressed --console-script cronwheel $(if $(PREAMBLE),--preamble $(PREAMBLE)) \
		--python '/usr/bin/env python3' --output-file $(DIST)/cronwheel.pyz "$$(echo $(DIST)/cronwheel-*.whl)[postgres]"
	$(if $(PREAMBLE),rm -f $(PREAMBLE))

# Install on this host (or into $(DESTDIR) for a package): the single-file executable from
# `make dist`, the man pages, the systemd unit and a commented configuration file. An existing
# configuration is never overwritten; `make uninstall` removes what install put, and the
# configuration only while it is unchanged. Then: systemctl daemon-reload && systemctl enable --now cronwheel
# PREFIX=/opt/cw SYSCONFDIR=/opt/cw/etc: the CLI of that build reads /opt/cw/etc/cronwheel/cronwheel.toml
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/cronwheel
# systemd reads units from /etc/systemd/system, /usr/local/lib/systemd/system and
# /usr/lib/systemd/system, never from under another PREFIX (/opt/cw): there the unit goes
# where this host's systemd puts its own (pkg-config's systemdsystemunitdir)
SYSTEMD_UNITDIR = $(or $(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null),/lib/systemd/system)
UNITDIR    ?= $(if $(filter /usr /usr/local,$(PREFIX)),$(PREFIX)/lib/systemd/system,$(SYSTEMD_UNITDIR))
SYSCONFDIR ?= /etc
CONFIG      = $(SYSCONFDIR)/cronwheel/cronwheel.toml
MANPAGES   := man1/cronwheel.1 man5/cronwheel.5 man5/cronwheel.toml.5

install: dist
	install -D -m 0755 $(DIST)/cronwheel.pyz $(DESTDIR)$(BINDIR)/cronwheel
	for page in $(MANPAGES); do install -D -m 0644 man/$$(basename $$page) $(DESTDIR)$(MANDIR)/$$page; done
	install -d -m 0755 $(DESTDIR)$(UNITDIR)
	sed -e 's|/usr/local/bin/cronwheel|$(BINDIR)/cronwheel|g' -e 's|/etc/cronwheel/cronwheel.toml|$(CONFIG)|g' \
		systemd/cronwheel.service > $(DESTDIR)$(UNITDIR)/cronwheel.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/cronwheel.service
	sed -e 's|/usr/local/bin/cronwheel|$(BINDIR)/cronwheel|g' -e 's|/etc/cronwheel/cronwheel.toml|$(CONFIG)|g' \
		systemd/cronwheel.service.d/cron-replacement.conf.example \
		| install -D -m 0644 /dev/stdin $(DESTDIR)$(DOCDIR)/cron-replacement.conf.example
	@if [ -e $(DESTDIR)$(CONFIG) ]; then echo "keeping the existing $(DESTDIR)$(CONFIG)"; \
	else install -D -m 0644 etc/cronwheel.toml $(DESTDIR)$(CONFIG); fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/cronwheel $(DESTDIR)$(UNITDIR)/cronwheel.service
	for page in $(MANPAGES); do rm -f $(DESTDIR)$(MANDIR)/$$page; done
	rm -rf $(DESTDIR)$(DOCDIR)
	@if [ -e $(DESTDIR)$(CONFIG) ] && ! cmp -s etc/cronwheel.toml $(DESTDIR)$(CONFIG); then \
	  echo "keeping $(DESTDIR)$(CONFIG): it was changed since install"; \
	else rm -f $(DESTDIR)$(CONFIG); rmdir $(DESTDIR)$(SYSCONFDIR)/cronwheel 2>/dev/null || true; fi
