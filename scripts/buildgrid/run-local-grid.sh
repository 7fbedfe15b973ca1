#!/usr/bin/env bash
# Start a remote execution grid on this machine for trying `--remote-exec`: a private PostgreSQL
# cluster (unix socket only), BuildGrid (CAS, action cache, Execution, Bots; buildgrid.yml.in)
# and N `mcpp worker` processes, all under one directory. Ctrl-C stops everything.
#
#   scripts/buildgrid/run-local-grid.sh [--workers N] [--slots S] [--dir DIR] [--keepalive SECONDS]
#
# then, in a project:  mcpp build --remote unix:DIR/bgd.sock --remote-exec
# Needs the test extra (`make install-test`: buildgrid, psycopg2-binary) and PostgreSQL 15
# (`initdb`, `pg_ctl`); as root, the cluster runs as the `postgres` user.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
python=${MCPP_PYTHON:-$repo/.venv/bin/python}
[[ -x $python ]] || { echo "run-local-grid: $python not found; run \`make install-test\` first" >&2; exit 1; }
exec "$python" "$here/local_grid.py" "$@"
