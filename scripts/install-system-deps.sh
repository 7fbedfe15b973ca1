#!/usr/bin/env bash
# Install the system packages the test suite needs on Debian 12: clang-19 with libc++ (for
# `import std;`) and ninja (for the benchmark's comparison). gcc/g++ are assumed present.
# Idempotent: installs only what is missing. Needs root (or sudo) when something is missing.
set -euo pipefail

# chromium: the timings report (`mcpp build --timings`) is checked in a real headless browser.
# That test is skipped without it, so a failed install only warns.
if ! dpkg -s chromium >/dev/null 2>&1; then
    s=""; [[ $(id -u) -ne 0 ]] && s=sudo
    echo "install-system-deps: apt-get install chromium"
    { DEBIAN_FRONTEND=noninteractive $s apt-get install -y -q chromium >/dev/null 2>&1 \
      || { $s apt-get update -q >/dev/null 2>&1 \
           && DEBIAN_FRONTEND=noninteractive $s apt-get install -y -q chromium >/dev/null 2>&1; }; } \
      || echo "install-system-deps: warning: could not install chromium; the browser test of the" \
              "timings report will be skipped" >&2
fi

need=()
for p in clang-19 libc++-19-dev libc++abi-19-dev clang-tools-19 ninja-build; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
((${#need[@]})) || exit 0

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-system-deps: need root to install: ${need[*]}" >&2; exit 1; }
    SUDO=sudo
fi
echo "install-system-deps: apt-get install ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q "${need[@]}" >/dev/null 2>&1 \
    || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q "${need[@]}" >/dev/null; }
