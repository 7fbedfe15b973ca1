#!/usr/bin/env bash
# Install the system packages the test suite needs on Debian 12: clang-19 with libc++ (for
# `import std;`), ninja (for the benchmark's comparison), PostgreSQL 15 (the job scheduler of
# the remote-execution tests' BuildGrid), and for the cross builds (`--target aarch64-linux-gnu`)
# the aarch64 cross gcc, qemu-user to run its binaries, lld-19 (clang's cross linker) and `file`
# (which the cross tests ask what a binary is), and the shader compilers of the SPIR-V lane
# (glslang-tools, glslc, spirv-tools: the payload `xim:glslang` adopts them from /usr). gcc/g++ are
# assumed present.
# Idempotent: installs only what is missing. Needs root (or sudo) when something is missing.
#
# apt's own output is shown (a silent minute-long install looks like a hang). A fresh cloud
# machine often runs unattended-upgrades at boot, which holds the dpkg/apt locks for minutes: wait
# for them up to MCPP_APT_LOCK_WAIT seconds (default 600), then fail saying which lock it was.
set -euo pipefail

need=()
for p in clang-19 libc++-19-dev libc++abi-19-dev clang-tools-19 ninja-build postgresql-15 \
         g++-aarch64-linux-gnu qemu-user lld-19 file glslang-tools glslc spirv-tools; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
want_chromium=0
dpkg -s chromium >/dev/null 2>&1 || want_chromium=1
if ((${#need[@]} == 0 && want_chromium == 0)); then
    echo "install-system-deps: all present (clang-19, libc++-19, clang-tools-19, ninja-build, postgresql-15," \
         "g++-aarch64-linux-gnu, qemu-user, lld-19, file, glslang-tools, glslc, spirv-tools, chromium)"
    exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null; then
        if ((${#need[@]} == 0)); then  # only the optional browser is missing
            echo "install-system-deps: warning: chromium is missing and installing it needs root;" \
                 "the browser test of the timings report will be skipped" >&2
            exit 0
        fi
        echo "install-system-deps: need root to install: ${need[*]}" >&2
        exit 1
    fi
    SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
wait_s=${MCPP_APT_LOCK_WAIT:-600}
deadline=$((SECONDS + wait_s))
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Run apt-get, showing its output; while another process holds the dpkg/apt lock, retry until
# the deadline. Any other failure is returned at once.
apt_get() {
    while true; do
        local left=$((deadline - SECONDS)); ((left > 0)) || left=1
        set +e
        $SUDO apt-get -o DPkg::Lock::Timeout="$left" "$@" 2>&1 | tee "$log"
        local rc=${PIPESTATUS[0]}
        set -e
        ((rc == 0)) && return 0
        if grep -qE "Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock" "$log"; then
            if ((SECONDS >= deadline)); then
                local holder
                holder=$(grep -oE "held by process [0-9]+ \([^)]*\)" "$log" | head -1 || true)
                echo "install-system-deps: error: the dpkg/apt lock is still taken after ${wait_s}s" \
                     "${holder:+(}${holder}${holder:+)}; another apt or unattended-upgrades is running." \
                     "Wait for it to finish and run this again, or set MCPP_APT_LOCK_WAIT=SECONDS." >&2
                exit 1
            fi
            echo "install-system-deps: waiting for the dpkg/apt lock ($((deadline - SECONDS))s left)..."
            sleep "${MCPP_APT_LOCK_POLL:-5}"
            continue
        fi
        return "$rc"
    done
}

if ((${#need[@]})); then
    echo "install-system-deps: installing ${need[*]}"
    if ! apt_get install -y -q "${need[@]}"; then
        echo "install-system-deps: install failed; refreshing the package lists and trying again"
        apt_get update -q || { echo "install-system-deps: error: apt-get update failed (output above)" >&2; exit 1; }
        apt_get install -y -q "${need[@]}" \
            || { echo "install-system-deps: error: apt-get install ${need[*]} failed (output above)" >&2; exit 1; }
    fi
    echo "install-system-deps: installed ${need[*]}"
fi

# chromium: the timings report (`mcpp build --timings`) is checked in a real headless browser.
# That test is skipped without it, so a failed install only warns.
if ((want_chromium)); then
    echo "install-system-deps: installing chromium (for the timings report's browser test)"
    { apt_get install -y -q chromium || { apt_get update -q && apt_get install -y -q chromium; }; } >/dev/null \
        || echo "install-system-deps: warning: could not install chromium; the browser test of the" \
                "timings report will be skipped" >&2
fi
