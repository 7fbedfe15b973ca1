"""Maps the repository's top-level folders onto the installed `mcpp.` namespace.

`engine/`, `cas/`, `sandbox/` and `starlark_rules/` stay where a reader expects them, while the
installed import names are `mcpp.engine`, `mcpp.cas`, ...: a wheel that put a top-level `engine`
into site-packages would collide with any other distribution of that name. The metadata lives in
pyproject.toml; only the package list, computed from the tree, and the native client's build
are here.

The folders of `starlark_rules/` hold data (Starlark, TOML), no Python; to Python each is still an
importable namespace package, so each is listed (setuptools warns of any it would leave out) and
its files are package data (pyproject.toml).

The `mcpp` command itself is built here too: the native client (engine/server/native/client.c),
which hands a build to the workspace's warm server without starting an interpreter, compiled
with the C compiler found (`$CC`, else `cc`) and installed as a script; the Python client it
runs for everything else is the `mcpp-py` console script (pyproject.toml). Where no compiler
works, `mcpp` is a script that runs the Python client (the command behaves the same, ~9 ms
slower to hand a build over).
"""
import os
import shutil
import subprocess

from setuptools import Command, find_namespace_packages, find_packages, setup
from setuptools.command.build import build

from distutils.command.build_scripts import build_scripts  # setuptools' own copy, once it is imported

TOP_LEVEL = ("engine", "cas", "sandbox", "starlark_rules")

CODE = find_packages(include=[f"{t}*" for t in TOP_LEVEL])
DATA = [p for p in find_namespace_packages(include=["starlark_rules.*"]) if all(s.isidentifier() for s in p.split("."))]

CLIENT_SOURCE = "engine/server/native/client.c"
CLIENT = "build/client/mcpp"  # installed as the script `mcpp` (`CopyClient`)
PYTHON_CLIENT = """#!/bin/sh
# `mcpp`: no C compiler worked when mcpp was installed, so this runs the Python client.
exec "$(dirname "$0")/mcpp-py" "$@"
"""


class BuildClient(Command):
    """Build `mcpp`, the native client, before the scripts are copied (`build`'s first step)."""

    description = "compile the native mcpp client"
    user_options: list = []

    def initialize_options(self) -> None:
        pass

    def finalize_options(self) -> None:
        pass

    def run(self) -> None:
        os.makedirs(os.path.dirname(CLIENT), exist_ok=True)
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if cc:
            made = subprocess.run([*cc.split(), "-O2", "-Wall", "-o", CLIENT, CLIENT_SOURCE],
                                  capture_output=True, text=True)
            if made.returncode == 0:
                return
            self.warn(f"the native mcpp client did not compile ({cc}):\n{made.stderr}")
        else:
            self.warn("no C compiler: `mcpp` is the Python client")
        with open(CLIENT, "w") as f:
            f.write(PYTHON_CLIENT)
        os.chmod(CLIENT, 0o755)


class CopyClient(build_scripts):
    """`build_scripts` for the one script, `mcpp`, copied as it is: the base class reads every
    script as text, to point a `#!python` line at the interpreter, and a compiled program is
    not text. (A data file in `bin/` instead is left out of editable installs.)"""

    def copy_scripts(self):
        self.mkpath(self.build_dir)
        outfile = os.path.join(self.build_dir, os.path.basename(CLIENT))
        self.copy_file(CLIENT, outfile)  # its mode too: executable
        return [outfile], [outfile]


build.sub_commands.insert(0, ("build_client", None))

setup(
    packages=[f"mcpp.{name}" for name in sorted(set(CODE + DATA))],
    package_dir={f"mcpp.{t}": t for t in TOP_LEVEL},
    scripts=[CLIENT],
    cmdclass={"build_client": BuildClient, "build_scripts": CopyClient},
)
