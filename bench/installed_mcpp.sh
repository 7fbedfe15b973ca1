#!/usr/bin/env bash
# Install mcpp as a user installs it (`pip install .` into bench/work/venv-installed, made on first
# use and refreshed on each call) and print the path of its `mcpp`. The benchmarks measure this
# copy rather than the development checkout's editable install, whose import hook adds ~12 ms to
# every start of `mcpp`. Run from anywhere; installs the checkout this script belongs to.
set -euo pipefail
cd "$(dirname "$0")/.."
INSTALLED=bench/work/venv-installed
[[ -x $INSTALLED/bin/python ]] || { python3 -m venv "$INSTALLED" && "$INSTALLED/bin/pip" install -q --upgrade pip; } >&2
{ "$INSTALLED/bin/pip" install -q --force-reinstall --no-deps . && "$INSTALLED/bin/pip" install -q .; } >&2
# As pip compiles the .pyc files at install, one start writes the dataclasses' code cache beside
# them (engine/core/dataclass_code.py), even where PYTHONDONTWRITEBYTECODE keeps later runs from it.
env -u PYTHONDONTWRITEBYTECODE MCPP_NO_SERVER=1 "$INSTALLED/bin/mcpp" --version >/dev/null
echo "$PWD/$INSTALLED/bin/mcpp"
