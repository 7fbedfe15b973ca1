"""Per-action overhead of each sandbox mode (not a test; run by hand, ~30 s):

    .venv/bin/python bench/sandbox_overhead.py [WORK_DIR]

Interleaves the variants so that load on the machine affects them alike; prints medians.
"""
import os, subprocess, sys, tempfile, time, statistics, shutil
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from mcpp.sandbox import SandboxSpec, BwrapSandbox, DirSandbox, LocalSandbox, SandboxPool, prefix_map_flags
from mcpp.sandbox.bwrap import bwrap_prefix, find_bwrap
W = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="mcpp-sandbox-bench-") + "/work"
shutil.rmtree(W, ignore_errors=True)
P = W + "-proj"; os.makedirs(P + "/inc", exist_ok=True); os.makedirs(P + "/obj", exist_ok=True)
open(P + "/a.c", "w").write('#include <stdio.h>\n#include "a.h"\nint f(void){printf("%d", A); return A;}\n')
open(P + "/inc/a.h", "w").write("#define A 3\n")
gcc = os.path.realpath(shutil.which("gcc"))
env = {"PATH": "/usr/bin:/bin"}
def mk(argv, **kw):
    return SandboxSpec(argv=tuple(argv), env=env, inputs=kw.get("inputs", {}), tools=(gcc,), outputs=kw.get("outputs", ()),
                       root=P, depfile=kw.get("depfile"), label="bench")
sbs = {"bwrap": BwrapSandbox(pool=SandboxPool(W)), "dir": DirSandbox(pool=SandboxPool(W)), "off": LocalSandbox(pool=SandboxPool(W))}
def bench(n, fn):
    fn(); ts = []
    for _ in range(n):
        t = time.perf_counter(); fn(); ts.append((time.perf_counter() - t) * 1000)
    return statistics.median(ts)
def run_rel(sb, spec):
    r = sb.run(spec); assert r.exit_code == 0, r.stderr; sb.release(r)
raw_bwrap = bwrap_prefix(find_bwrap()) + ["--bind", P, "/execroot", "--chdir", "/execroot", "--setenv", "PATH", "/usr/bin:/bin", "--"]
true_spec = mk(["true"])
cc_argv = [gcc, *prefix_map_flags(), "-O1", "-c", "a.c", "-Iinc", "-o", "obj/a.o", "-MD", "-MF", "obj/a.d"]
cc_spec = mk(cc_argv, inputs={"a.c": P + "/a.c", "inc/a.h": P + "/inc/a.h"}, outputs=("obj/a.o", "obj/a.d"), depfile="obj/a.d")
raw_cc = [a.replace("@@EXECROOT@@", P) for a in cc_argv]
variants = {
 "true: raw subprocess": lambda: subprocess.run(["true"], env=env),
 "true: raw bwrap argv": lambda: subprocess.run(raw_bwrap + ["true"], env={}),
}
for name, sb in sbs.items():
    variants[f"true: {name}"] = (lambda sb: lambda: run_rel(sb, true_spec))(sb)
gvariants = {"gcc: raw subprocess": lambda: subprocess.run(raw_cc, env=env, cwd=P, check=True)}
for name, sb in sbs.items():
    gvariants[f"gcc: {name}"] = (lambda sb: lambda: run_rel(sb, cc_spec))(sb)
def inter(vs, n):
    ts = {k: [] for k in vs}
    for f in vs.values(): f()
    for _ in range(n):
        for k, f in vs.items():
            t = time.perf_counter(); f(); ts[k].append((time.perf_counter() - t) * 1000)
    return ts
for vs, n in ((variants, 200), (gvariants, 50)):
    for k, t in inter(vs, n).items():
        t.sort()
        print(f"{k:24s} median {statistics.median(t):7.2f} ms  p10 {t[len(t)//10]:7.2f}  mean {statistics.mean(t):7.2f}")
for sb in sbs.values(): sb.shutdown()
shutil.rmtree(W, ignore_errors=True)
shutil.rmtree(P, ignore_errors=True)
