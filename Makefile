# piweb: `make run` starts the app, `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)

.PHONY: run test install pi-reference migrate createsuperuser lint format bench

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

pi-reference: install
	bash bin/install-pi-reference

migrate: install
	$(PY) manage.py migrate --noinput

run: migrate
	$(PY) manage.py runpiweb

test: install pi-reference
	bash bin/run-tests

createsuperuser: migrate
	$(PY) manage.py createsuperuser

lint: install
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

format: install
	$(VENV)/bin/ruff format . && $(VENV)/bin/ruff check --fix .

bench: migrate
	for b in bench/*_bench.py; do echo "== $$b"; $(PY) $$b || exit 1; done
