# Two entry points, both self-contained on a fresh Debian 12 machine with Python 3.11:
#   make example   install mcpp into .venv and build + run examples/01-hello
#   make test      install mcpp, its test dependencies and system packages, run the whole suite
#                  with the build server off, then the e2e suite with it on
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: example test test-server install install-test bench

# A set-up step runs quietly: its output is kept and shown only when it fails (with its exit status).
quietly = @log=$$(mktemp) && { $(1) >"$$log" 2>&1 || { status=$$?; cat "$$log"; rm -f "$$log"; \
	echo "make: \`$(strip $(1))\` failed (exit $$status)" >&2; exit $$status; }; } && rm -f "$$log"

$(BIN)/python:
	$(call quietly,$(PYTHON) -m venv $(VENV))
	$(call quietly,$(BIN)/pip install -q --upgrade pip)

# An editable install leaves the sources uncompiled: `precompile` writes their bytecode (and the
# dataclasses' code cache, engine/core/dataclass_code.py) once, as `pip install .` does, so that
# no `mcpp` process the suite starts compiles the engine again (each would, where
# PYTHONDONTWRITEBYTECODE is set: about a quarter of a second per process).
define precompile
$(call quietly,$(BIN)/python -m compileall -q engine cas sandbox starlark_rules)
$(call quietly,env -u PYTHONDONTWRITEBYTECODE MCPP_NO_SERVER=1 $(BIN)/mcpp --version)
endef

install: $(BIN)/python
	$(call quietly,$(BIN)/pip install -q -e .)
	$(precompile)

install-test: $(BIN)/python
	bash scripts/install-system-deps.sh
	$(call quietly,$(BIN)/pip install -q -e '.[test]')
	$(precompile)

example: install
	cd examples/01-hello && ../../$(BIN)/mcpp run

# `make test` runs two pytest sessions and fails when either fails (each prints its summary):
#   1. the whole suite (unit, manifest goldens, e2e) with the warm build server off, and
#   2. the e2e suite again with every `mcpp build/run/test` going through the server, as users'
#      builds do (docs/server.md), leaving out the files marked `one_mode` (they set the server
#      mode per build themselves, or start no build, so a second run would repeat them).
# Files holding a `heavy` test run first (tests/conftest.py). Wall-clock figures of the engine's
# inner loops are not tested here: bench/hot_loops.py measures them. Each session ends with its
# 25 slowest tests (`--durations`): where the suite's time goes, in every CI log.
PYTEST := $(BIN)/python -m pytest -q -n auto --durations=25

test: install-test
	@status=0; \
	$(PYTEST) tests || status=1; \
	MCPP_TEST_SERVER=1 $(PYTEST) -m "not one_mode" tests/e2e || status=1; \
	exit $$status

# Only the e2e suite through the server (the second half of `make test`).
test-server: install-test
	MCPP_TEST_SERVER=1 $(PYTEST) -m "not one_mode" tests/e2e

bench: install-test
	$(BIN)/python bench/run_bench.py
