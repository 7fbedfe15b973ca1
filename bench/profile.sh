#!/usr/bin/env bash
# Where mcpp's own time goes in one build, sampled by py-spy (engine overhead, not the compiler).
#
#   bash bench/profile.sh [clean|noop|edit-one|warm] [N] [-- extra mcpp build args]
#
#   clean     no target/, an empty MCPP_HOME (the default)
#   noop      nothing changed (full engine: --message-format json, which skips the fast path)
#   edit-one  one source gets a new function: one compile and the link
#   warm      rm -rf target with the cache home kept: everything restored from the action cache
#
# Generates an N-unit project (bench/gen_project.py, default N=300) under bench/work/profile-nN,
# brings it to the scenario's starting point, then runs `mcpp build -j 2` under
# `py-spy record` (only mcpp's Python process is sampled: compilers and bwrap are children it
# waits for, and an idle thread is not counted). Writes bench/work/profile-<scenario>-nN.txt
# (collapsed stacks: feed it to speedscope or flamegraph.pl for a picture) and prints the 30
# functions with the most own samples and the 30 with the most samples inclusive.
#
# py-spy comes from bench/requirements.txt, installed into .venv on first use (it is a bench
# tool, not a dependency of mcpp).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SCENARIO=${1:-clean}
N=${2:-300}
shift $(( $# > 2 ? 2 : $# ))
[[ ${1:-} == -- ]] && shift
case $SCENARIO in clean|noop|edit-one|warm) ;; *) echo "profile.sh: unknown scenario $SCENARIO" >&2; exit 2;; esac

PY=$ROOT/.venv/bin/python
MCPP=$ROOT/.venv/bin/mcpp
[[ -x $ROOT/.venv/bin/py-spy ]] || "$ROOT/.venv/bin/pip" install -q -r bench/requirements.txt
WORK=$ROOT/bench/work/profile-n$N
PROJ=$WORK/proj
export MCPP_HOME=$WORK/home
export PYTHONPYCACHEPREFIX=$ROOT/bench/work/pycache
unset PYTHONDONTWRITEBYTECODE
[[ -f $PROJ/mcpp.toml ]] || "$PY" bench/gen_project.py --sources "$N" --out "$PROJ" --force >/dev/null
build() { (cd "$PROJ" && "$MCPP" build -j 2 --message-format json "$@" >/dev/null); }

case $SCENARIO in
  clean) rm -rf "$PROJ/target" "$MCPP_HOME" ;;
  noop) build "$@"; build "$@" ;;
  edit-one)
    build "$@"
    f=$(cd "$PROJ" && ls src/mod00/*.cpp | head -1)
    printf '\nunsigned g_profile_%s(unsigned x) { return x * 3u; }\n' "$(date +%s%N)" >> "$PROJ/$f" ;;
  warm) build "$@"; rm -rf "$PROJ/target" ;;
esac

OUT=$ROOT/bench/work/profile-$SCENARIO-n$N
cd "$PROJ"
"$ROOT/.venv/bin/py-spy" record --rate 250 --format raw --output "$OUT.txt" --nonblocking \
    -- "$MCPP" build -j 2 --message-format json "$@" >/dev/null
"$PY" - "$OUT.txt" <<'EOF'
import collections, sys
own, incl, total = collections.Counter(), collections.Counter(), 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    n = int(n)
    frames = stack.split(";")
    total += n
    own[frames[-1]] += n
    for f in set(frames):
        incl[f] += n
print(f"{total} samples ({sys.argv[1]})")
for title, c in (("own", own), ("inclusive", incl)):
    print(f"\n-- top 30 by {title} samples --")
    for f, n in c.most_common(30):
        print(f"{n:7d} {100 * n / max(total, 1):5.1f}%  {f}")
EOF
