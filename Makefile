# PayPilot: `make run` and `make test` are all a fresh clone needs (Python 3.11+).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test test-pg lint install migrate demo clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

migrate: install
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py demo_setup

# Web server and django-q2 cluster together, from the Procfile under honcho (manage.py serve):
# one Ctrl-C stops every process within seconds.
run: demo
	$(PY) manage.py collectstatic --noinput -v0
	@echo "PayPilot on http://$(HOST):$(PORT)/ (admin at /admin/). Ctrl-C stops the server and the workers."
	@$(PY) manage.py serve --host $(HOST) --port $(PORT)

test: install
	$(PY) -m pytest

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy paypilot ledger decisions dunning approvals integrations reconciliation operations

clean:
	rm -rf $(VENV) db.sqlite3 db.sqlite3-* var
