# Two entry points, both self-contained on a fresh Debian 12 machine with Python 3.11:
#   make example   install mcpp into .venv and build + run examples/01-hello
#   make test      install mcpp, its test dependencies and system packages, run the whole suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: example test test-server install install-test bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e .

install-test: $(BIN)/python
	bash scripts/install-system-deps.sh
	$(BIN)/pip install -q -e '.[test]'

example: install
	cd examples/01-hello && ../../$(BIN)/mcpp run

test: install-test
	$(BIN)/python -m pytest -q -n auto tests

# The e2e suite again, every build going through the warm build server (docs/server.md).
test-server: install-test
	MCPP_TEST_SERVER=1 $(BIN)/python -m pytest -q -n auto tests/e2e

bench: install-test
	$(BIN)/python bench/run_bench.py
