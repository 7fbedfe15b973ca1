#!/usr/bin/env bash
# ninja (with mcpp's exact flags), the real mcpp where installed, and this mcpp side by side:
#
#   bash bench/peers.sh N [--light] [--runs 5] [--order grouped|interleaved|both] [--no-results] ...
#
# Every option is bench/peers.py's (`python3 bench/peers.py --help`). mcpp is measured as a user
# installs it (bench/installed_mcpp.sh); MCPP=path/to/mcpp measures another build instead. The
# report is printed and becomes the newest section of bench/RESULTS.md (--no-results: not).
set -euo pipefail
cd "$(dirname "$0")/.."
MCPP=${MCPP:-$(bash bench/installed_mcpp.sh)}
PY=$(dirname "$MCPP")/python   # the harness needs only the standard library
[[ -x $PY ]] || PY=python3
exec "$PY" bench/peers.py --mcpp "$MCPP" "$@"
