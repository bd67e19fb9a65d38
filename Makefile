# piweb: `make run` starts the app, `make test` lints and runs the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)

.PHONY: run test install pi-reference migrate createsuperuser lint format bench sandbox model-catalog screenshots

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

pi-reference: install
	bash bin/install-pi-reference

# The model catalog (sessions_app/data/pi_models.json) from the pinned pi package.
model-catalog: pi-reference
	$(PY) bin/generate-model-catalog

migrate: install
	$(PY) manage.py migrate --noinput

# Every command a session runs goes through bubblewrap: install it when we can (root with
# apt), else say how. PIWEB_SANDBOX=off skips this (single-user machines only).
sandbox:
	@if [ "$${PIWEB_SANDBOX:-bwrap}" != "off" ] && ! command -v bwrap >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	  else \
	    echo "bubblewrap is missing: commands in sessions will be refused. Install it with:"; \
	    echo "    sudo apt-get install bubblewrap"; \
	  fi; \
	fi

run: migrate sandbox
	$(PY) manage.py runpiweb

# Lint first (ruff check, ruff format --check, mypy): CI runs this target.
test: lint pi-reference
	bash bin/run-tests

createsuperuser: migrate
	$(PY) manage.py createsuperuser

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff format . && $(VENV)/bin/ruff check --fix .

bench: migrate
	for b in bench/*_bench.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# Every main screen, from a seeded demo session, into docs/screenshots/ (headless Chromium).
screenshots: migrate
	$(PY) bench/screenshots.py
