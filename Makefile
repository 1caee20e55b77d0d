# Loci: the two commands a newcomer needs are `make serve` and `make test`.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: serve test lint lab bench bench-scale clean

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

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -n 2

lint: $(STAMP)
	$(BIN)/ruff check engine server evals tests loci notebooks
	$(BIN)/ruff format --check engine server evals tests loci notebooks
	$(BIN)/mypy engine server evals tests loci

# JupyterLab on notebooks/ (the jupytext .py files open as notebooks; see notebooks/jupyter_lab_config.py)
lab: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/jupyter lab --config=notebooks/jupyter_lab_config.py $(if $(filter 0,$(shell id -u)),--allow-root)

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/loci bench assemble
	HF_HUB_OFFLINE=1 $(BIN)/loci bench ingest

bench-scale: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/loci bench scale

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
