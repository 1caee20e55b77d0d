# Loci: the two commands a newcomer needs are `make serve` and `make test`.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8080

# the TypeScript client (clients/typescript): its node packages, from the committed lockfile
TS := clients/typescript
TS_DEPS := $(TS)/node_modules/.package-lock.json
NPM := $(shell command -v npm 2>/dev/null)

.PHONY: serve test lint lab bench bench-scale clean ts-types

$(BIN)/python:
	@command -v $(PY) >/dev/null 2>&1 || { echo "need $(PY) on PATH (or run: make PY=python3 ...)"; exit 1; }
	$(PY) -m venv $(VENV)

# torch first: pinning 2.13.0 takes the local CPU build instead of gigabytes of CUDA wheels.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

serve: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/loci serve --host $(HOST) --port $(PORT)

test: $(STAMP) $(if $(NPM),$(TS_DEPS))
	@$(if $(NPM),,echo "npm not found: the TypeScript client's tests will skip")
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -n 2

$(TS_DEPS): $(TS)/package.json $(TS)/package-lock.json
	cd $(TS) && npm ci --no-audit --no-fund
	touch $@

# regenerate the TypeScript client's types from the app's OpenAPI document (a test fails when they drift)
ts-types: $(STAMP) $(TS_DEPS)
	$(BIN)/python -m tests.integrations.typescript_types

lint: $(STAMP)
	$(BIN)/ruff check engine server evals tests loci notebooks clients/python
	$(BIN)/ruff format --check engine server evals tests loci notebooks clients/python
	$(BIN)/mypy engine server evals tests loci clients/python/split_wire.py

# JupyterLab on notebooks/ (the jupytext .py files open as notebooks; see notebooks/jupyter_lab_config.py)
lab: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/jupyter lab --config=notebooks/jupyter_lab_config.py $(if $(filter 0,$(shell id -u)),--allow-root)

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/loci bench assemble
	HF_HUB_OFFLINE=1 $(BIN)/loci bench ingest

bench-scale: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/loci bench scale

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(TS)/node_modules $(TS)/dist $(TS)/build
