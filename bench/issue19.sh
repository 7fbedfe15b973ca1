#!/usr/bin/env bash
# Every table of bench/RESULTS.md's "Overhead near zero" section, in one command:
#
#   bash bench/issue19.sh [OUT_DIR]            (default bench/work/issue19)
#
# 1. 300 units: mcpp vs ninja vs the real mcpp (clean, warm-home rebuild, no-op, edit-one);
# 2. 1,000 units: the same;
# 3. scale: planning per unit at 1,000 / 3,000 / 10,000 units (plan only; add
#    SCALE_BUILD=1 to also build them, with light units (gen_project.py --light: no standard
#    headers, ~0.03 s a file, so 10,000 units build in about two minutes per tool on 2 cores),
#    and time no-op and edit-one against ninja; SCALE_SIZES picks the sizes);
# 4. the sandbox's per-action cost (bench/sandbox_overhead.py).
#
# The real mcpp is used when `bash ../shared/tools/mcpp-peer/setup.sh` has prepared it.
# mcpp is measured as a user installs it (bench/installed_mcpp.sh: `pip install .` into
# bench/work/venv-installed), not through the development checkout's editable install,
# whose import hook adds ~12 ms to every start of `mcpp`.
# MCPP=path/to/mcpp runs another build of mcpp (e.g. a snapshot's venv) with these scripts;
# RUNS and CLEAN_RUNS (default 5 and 3) set the runs per row; ONLY="300 1000 scale sandbox"
# picks steps.
# Each step writes OUT_DIR/<step>.md; paste them into RESULTS.md with the machine's state.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/work/issue19}
MCPP=${MCPP:-$(bash bench/installed_mcpp.sh)}
PY=$(dirname "$MCPP")/python
RUNS=${RUNS:-5}            # runs per row (median reported); CLEAN_RUNS for the clean rows
CLEAN_RUNS=${CLEAN_RUNS:-3}
mkdir -p "$OUT"
want() { [[ " ${ONLY:-300 1000 scale sandbox} " == *" $1 "* ]]; }
want 300 && "$PY" bench/run_bench.py --mcpp "$MCPP" --sources 300 --runs "$RUNS" --clean-runs "$CLEAN_RUNS" --markdown "$OUT/n300.md"
want 1000 && "$PY" bench/run_bench.py --mcpp "$MCPP" --sources 1000 --runs "$RUNS" --clean-runs "$CLEAN_RUNS" --markdown "$OUT/n1000.md"
want scale && "$PY" bench/scale.py --mcpp "$MCPP" --sizes ${SCALE_SIZES:-1000,3000,10000} --runs 3 ${SCALE_BUILD:+--build --light} --markdown "$OUT/scale.md"
want sandbox && "$PY" bench/sandbox_overhead.py > "$OUT/sandbox_overhead.txt"
echo "bench/issue19.sh: reports in $OUT"
