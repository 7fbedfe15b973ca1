"""A real library index for the e2e tests (docs/dependencies.md): packages of C++ sources in
`.tar.zst` archives, their descriptors with each archive's blake3, signed by the payload tests'
key, served over HTTP on 127.0.0.1 (payload_index_support.IndexServer).

`LibraryIndex.standard()` holds three libraries, two versions each:

- `mcpplibs.shout` 1.0.0, 1.1.0: `shout::level()` is 10 or 11; feature `loud` adds 100.
- `mcpplibs.greet` 1.0.0, 1.1.0: `greet::version()`, `greet::shout_level()`; 1.0.0
  requires shout `~1.0`, 1.1.0 requires shout `1.1`.
- `extra.calc` 1.0.0, 2.0.0: `calc::twice(x)` (2.0.0: plus one), in a namespace of its own.

`add_release` publishes another version (a new release after a lock was written), `consumer`
writes a package that depends on the index and prints what it got.
"""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import blake3
import zstandard

from mcpp.engine.payloads.signature import sign_index
from payload_index_support import SIGNER, TRUSTED, IndexServer

__all__ = ["LibraryIndex", "IndexServer", "TRUSTED", "tar_zst", "consumer", "index_env"]


def tar_zst(prefix: str, files: dict[str, str]) -> bytes:
    """A `.tar.zst` of `files` under the directory `prefix/` (unpacked with `strip = 1`)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for rel, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{prefix}/{rel}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            t.addfile(info, io.BytesIO(data))
    return zstandard.ZstdCompressor().compress(buf.getvalue())


def shout_files(version: str) -> dict[str, str]:
    level = version.split(".")[1]
    return {
        "mcpp.toml": f'[package]\nname = "shout"\nversion = "{version}"\nnamespace = "mcpplibs"\n\n'
                     f'[features.loud]\n',
        "src/shout.cppm": "module;\n#ifdef MCPP_FEATURE_LOUD\n#define LOUD 100\n#else\n#define LOUD 0\n#endif\n"
                          "export module shout;\n"
                          f"export namespace shout {{ int level() {{ return 1{level} + LOUD; }} }}\n",
    }


def greet_files(version: str, shout_req: str) -> dict[str, str]:
    return {
        "mcpp.toml": f'[package]\nname = "greet"\nversion = "{version}"\nnamespace = "mcpplibs"\n\n'
                     f'[dependencies]\nshout = "{shout_req}"\n',
        "src/greet.cppm": "export module greet;\nimport shout;\n"
                          f"export namespace greet {{ const char* version() {{ return \"{version}\"; }} "
                          "int shout_level() { return shout::level(); } }\n",
    }


def calc_files(version: str) -> dict[str, str]:
    plus = " + 1" if version.startswith("2") else ""
    return {
        "mcpp.toml": f'[package]\nname = "calc"\nversion = "{version}"\nnamespace = "extra"\n',
        "src/calc.cppm": f"export module calc;\nexport namespace calc {{ int twice(int x) {{ return 2 * x{plus}; }} }}\n",
    }


class LibraryIndex:
    """A directory index at `root`; every change rewrites the descriptor and signs it again."""

    def __init__(self, root: Path):
        self.root = root
        self.releases: dict[tuple[str, str], list[dict]] = {}
        (root / "archives").mkdir(parents=True, exist_ok=True)
        (root / "index.toml").write_text('[index]\nname = "libs"\nformat = 1\n')

    @classmethod
    def standard(cls, root: Path) -> "LibraryIndex":
        index = cls(root)
        for v in ("1.0.0", "1.1.0"):
            index.add_release("mcpplibs", "shout", v, shout_files(v))
        index.add_release("mcpplibs", "greet", "1.0.0", greet_files("1.0.0", "~1.0"))
        index.add_release("mcpplibs", "greet", "1.1.0", greet_files("1.1.0", "1.1"))
        for v in ("1.0.0", "2.0.0"):
            index.add_release("extra", "calc", v, calc_files(v))
        return index

    def archive(self, namespace: str, name: str, version: str) -> Path:
        return self.root / "archives" / f"{namespace}-{name}-{version}.tar.zst"

    def add_release(self, namespace: str, name: str, version: str, files: dict[str, str],
                    yanked: bool = False) -> str:
        """Publish a release; returns its archive's blake3."""
        data = tar_zst(f"{name}-{version}", files)
        path = self.archive(namespace, name, version)
        path.write_bytes(data)
        digest = blake3.blake3(data).hexdigest()
        self.releases.setdefault((namespace, name), []).append(
            {"version": version, "url": f"archives/{path.name}", "blake3": digest, "size": len(data),
             "yanked": yanked})
        self._write(namespace, name)
        return digest

    def yank(self, namespace: str, name: str, version: str) -> None:
        for r in self.releases[(namespace, name)]:
            if r["version"] == version:
                r["yanked"] = True
        self._write(namespace, name)

    def _write(self, namespace: str, name: str) -> None:
        lines = ["[package]", f'name = "{name}"', f'namespace = "{namespace}"', ""]
        for r in self.releases[(namespace, name)]:
            lines += ["[[release]]", f'version = "{r["version"]}"',
                      f'source = {{ url = "{r["url"]}", blake3 = "{r["blake3"]}", size = {r["size"]}, strip = 1 }}',
                      f'yanked = {"true" if r["yanked"] else "false"}', ""]
        d = self.root / "pkgs" / namespace
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}.toml").write_text("\n".join(lines))
        sign_index(str(self.root), SIGNER)


def index_env(url: str) -> dict[str, str]:
    """The environment a command reads the index at `url` under."""
    return {"MCPP_INDEX": url, **TRUSTED}


MAIN = """#include <cstdio>
import greet;
import calc;
int main() {
    std::printf("greet %s shout=%d calc=%d\\n", greet::version(), greet::shout_level(), calc::twice(20));
    return 0;
}
"""


def consumer(root: Path, deps: str, main: str = MAIN, name: str = "app") -> Path:
    """A package at `root` whose [dependencies] are `deps` (TOML lines) and whose main prints."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "mcpp.toml").write_text(f'[package]\nname = "{name}"\nversion = "0.1.0"\n\n[dependencies]\n{deps}')
    (root / "src" / "main.cpp").write_text(main)
    return root
