"""A real payload index for the e2e tests: archives of a small code generator, descriptors with
their blake3, served over HTTP on 127.0.0.1 by a server that counts the requests it answers.

A plain-http index is believed only for descriptors a trusted key signed (docs/payloads.md), so
`make_index` signs its descriptors with `SIGNER` and a command reading it needs `TRUSTED`."""
from __future__ import annotations

import http.server
import io
import tarfile
import threading
from pathlib import Path

import blake3

from mcpp.cas.remote.signing import SecretKey, generate
from mcpp.engine.payloads.signature import sign_index

SIGNER = generate("test-index")
TRUSTED = {"MCPP_PAYLOAD_TRUSTED_KEYS": str(SIGNER.public)}  # the environment that trusts SIGNER

# `gen OUT`: writes a C++ source whose function returns the generator's version number.
GEN = "#!/bin/sh\nprintf 'int gen_value() { return %s; }\\n' {num} > \"$1\"\n"


def tar_gz(members: list[tuple[str, bytes | None, str]], mode: str = "w:gz") -> bytes:
    """members: (name, content or None for a symlink, link target)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as t:
        for name, content, link in members:
            info = tarfile.TarInfo(name)
            if content is None:
                info.type = tarfile.SYMTYPE
                info.linkname = link
            else:
                info.size = len(content)
                info.mode = 0o755
            t.addfile(info, io.BytesIO(content) if content is not None else None)
    return buf.getvalue()


def gen_archive(version: str) -> bytes:
    num = version.replace(".", "")
    return tar_gz([(f"gen-{version}/bin/gen", GEN.replace("{num}", num).encode(), "")])


def climbing_links(prefix: str, levels: int) -> tuple[list[tuple[str, bytes | None, str]], str]:
    """Symlink members (for `tar_gz`) whose texts each stay inside the payload when read as
    text, and the path (relative to the payload root) of the last one, which resolves `levels`
    directories above the root: `c1/u -> ..` is the root, `c<k+1>/u -> ../c<k>/u/..` is one
    above `c<k>/u`. Each text normalizes to a directory of the payload; only walking the links
    shows where they lead."""
    members = [(f"{prefix}c1/u", None, "..")]
    for k in range(1, levels + 1):
        members.append((f"{prefix}c{k + 1}/u", None, f"../c{k}/u/.."))
    return members, f"c{levels + 1}/u"


def zeros_tar_zst(path: Path, member: str, size: int) -> None:
    """A `.tar.zst` at `path` whose one file `member` holds `size` zero bytes, written as a
    stream: neither the archive nor the member is ever in memory whole (a decompression bomb)."""
    import zstandard

    info = tarfile.TarInfo(member)
    info.size, info.mode = size, 0o644
    zero = bytes(1 << 20)
    with open(path, "wb") as f, zstandard.ZstdCompressor(level=1).stream_writer(f) as z:
        z.write(info.tobuf(format=tarfile.GNU_FORMAT))
        left = size
        while left:
            n = min(left, len(zero))
            z.write(zero[:n])
            left -= n
        z.write(bytes(-size % tarfile.BLOCKSIZE + 2 * tarfile.BLOCKSIZE))


def make_index(root: Path, versions=("1.0.0", "2.0.0"), archives: dict[str, bytes] | None = None,
               digests: dict[str, str] | None = None, suffix: str = ".tar.gz", extra: str = "",
               signer: SecretKey | None = SIGNER) -> Path:
    """An index at `root` describing `xim:gen` with one archive per version (`archives/gen-<v>
    <suffix>`; one already there is kept), its descriptor signed by `signer` (None: unsigned);
    `extra` is more keys for each source (`a = 1, `)."""
    (root / "pkgs" / "xim").mkdir(parents=True, exist_ok=True)
    (root / "archives").mkdir(exist_ok=True)
    (root / "index.toml").write_text('[index]\nname = "test"\nformat = 1\n')
    lines = ['[package]', 'name = "gen"', 'namespace = "xim"', 'bins = ["bin/gen"]', '']
    for v in versions:
        path = root / "archives" / f"gen-{v}{suffix}"
        if (archives or {}).get(v) or not path.exists():
            path.write_bytes((archives or {}).get(v) or gen_archive(v))
        with open(path, "rb") as f:
            digest = (digests or {}).get(v) or blake3.blake3(f.read()).hexdigest()
        lines += ['[[release]]', f'version = "{v}"',
                  f'linux-x86_64 = {{ url = "archives/gen-{v}{suffix}", blake3 = "{digest}", '
                  f'size = {path.stat().st_size}, {extra}strip = 1 }}', '']
    (root / "pkgs" / "xim" / "gen.toml").write_text("\n".join(lines))
    if signer is not None:
        sign_index(str(root), signer)
    return root


class IndexServer:
    """Serves a directory on 127.0.0.1; `requests` lists the paths asked for. `stall` set: the
    archive requests send half the body and hang until `release` is set, then send the rest: a
    download a test can kill half-way, or hold while a second build starts."""

    def __init__(self, root: Path):
        self.root = root
        self.requests: list[str] = []
        self.stall = threading.Event()
        self.release = threading.Event()
        self.stalled = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                path = server.root / self.path.lstrip("/")
                if not path.is_file():
                    self.send_error(404)
                    return
                data = path.read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if server.stall.is_set() and self.path.startswith("/archives/"):
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    server.stalled.set()
                    server.release.wait(60)
                    data = data[len(data) // 2:]  # then the rest (a killed client no longer reads it)
                try:
                    self.wfile.write(data)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
