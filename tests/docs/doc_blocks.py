"""The command blocks of the documentation, read as a session to run and compare.

The convention every document follows (README.md, docs/*.md, examples/*/README.md):

- A ```` ```console ```` block is a transcript: each line starting with `$ ` is a command (a line
  ending in `\\` continues on the next), and the lines after it, up to the next `$ ` line, are what
  the command prints, stdout and stderr together as a terminal shows them. The blocks of one
  document run in order; each starts at the repository root (a copy of it: examples/ and
  `.venv/bin/mcpp`), and a `cd` carries over to the next command of the block.
- `<!-- session -->` on a line of its own anywhere in a document makes the whole document one
  session: a `cd` carries over from block to block too (docs/tutorial.md).
- `<!-- file: PATH -->` right before any fenced block writes the block's text to PATH (relative to
  the session's directory) at that point of the session: the tutorial's edits.
- `<!-- illustrative -->` right before a block: shown, never run (a command that needs a server,
  a placeholder path, `make test` itself).
- `<!-- needs: WHAT -->` right before a block: run only where WHAT is here (`nvcc`: the CUDA
  toolkit at /usr/local/cuda; `cuda-gpu`: a CUDA device; `glslang`: glslangValidator in /usr/bin);
  elsewhere it is skipped, saying why.
- A `sh`, `bash` or `shell` block must be marked illustrative: a block meant to be run is a
  `console` block, so that what it prints is checked.

Before comparing, output and documented text are normalised, and only so:
1. a duration (`0.41s`, `12ms`) reads `<time>` on both sides;
2. the session's workspace root reads `/…` and its `$MCPP_HOME` reads `~/.mcpp` in the output;
3. trailing spaces and trailing empty lines go;
and in the documented text `…` within a line stands for any text on that line, and a line that is
only `…` for any number of lines (digests, sizes and compiler versions that differ per machine).
"""
from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

SHELL_LANGS = ("sh", "bash", "shell", "zsh")
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)[ \t]*(?P<lang>[\w+-]*)")
_MARKER = re.compile(r"^\s*<!--\s*(?P<body>.*?)\s*-->\s*$")
_DURATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:ms|s)\b")
ELLIPSIS = "…"


@dataclass
class Block:
    path: str  # the document, for messages
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    markers: list[str] = field(default_factory=list)

    def marker(self, name: str) -> str | None:
        """The value of `<!-- name: value -->` (or "" for `<!-- name -->`) before this block."""
        for m in self.markers:
            key, _, value = m.partition(":")
            if key.strip() == name:
                return value.strip()
        return None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class Command:
    line: int
    command: str
    expected: list[str]


def blocks(text: str, path: str) -> list[Block]:
    """The fenced blocks of a markdown text, each with the `<!-- ... -->` markers just above it."""
    lines = text.splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent, start = m.group("fence"), len(m.group("indent")), i + 1
        markers = []
        j = i - 1
        while j >= 0 and (mm := _MARKER.match(lines[j])):
            markers.insert(0, mm.group("body"))
            j -= 1
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence[0] * len(fence)):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        out.append(Block(path, start, m.group("lang").lower(), "\n".join(body) + "\n", markers))
        i += 1
    return out


def is_session(text: str) -> bool:
    """Whether the document is marked `<!-- session -->`."""
    return any((m := _MARKER.match(line)) is not None and m.group("body") == "session" for line in text.splitlines())


def commands(block: Block) -> list[Command]:
    """The `$ ` commands of a console block with the output each is documented to print."""
    out: list[Command] = []
    lines = block.text.rstrip("\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            if out:
                out[-1].expected.append(line)
                i += 1
                continue
            raise ValueError(f"{block.where}: a console block starts with a `$ ` command, not `{line}`")
        start = block.line + 1 + i
        command = line[2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + "\n" + lines[i]
        out.append(Command(start, command, []))
        i += 1
    return out


def normalised(text: str) -> list[str]:
    lines = [_DURATION.sub("<time>", line).rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether the output lines match the documented ones (`…` as described above)."""
    pattern = ""
    for line in expected:
        if line.strip() == ELLIPSIS:
            pattern += r"(?:[^\n]*\n)*?"
        else:
            pattern += r"[^\n]*".join(re.escape(part) for part in line.split(ELLIPSIS)) + r"\n"
    return re.fullmatch(pattern, "".join(f"{line}\n" for line in actual)) is not None


def mismatch(block: Block, cmd: Command, expected: list[str], actual: list[str]) -> str:
    diff = "\n".join(difflib.unified_diff(expected, actual, "documented", "printed", lineterm=""))
    return (f"{block.path}:{cmd.line}: `$ {cmd.command}` printed something else than the document shows "
            f"(normalised as tests/docs/doc_blocks.py says):\n{diff}")


def requirement_missing(what: str) -> str | None:
    """Why a `needs:` requirement is not met here, or None when it is."""
    if what == "nvcc":
        return None if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else "needs the CUDA toolkit (/usr/local/cuda)"
    if what == "cuda-gpu":
        smi = shutil.which("nvidia-smi")
        ok = smi is not None and subprocess.run([smi, "-L"], capture_output=True).returncode == 0
        return None if ok else "needs a CUDA GPU"
    if what == "glslang":
        return None if os.access("/usr/bin/glslangValidator", os.X_OK) else "needs glslang (/usr/bin/glslangValidator)"
    return f"unknown requirement `{what}` (known: nvcc, cuda-gpu, glslang)"


class Session:
    """One document's commands, run in order in a workspace holding a copy of examples/, with
    `mcpp` (and the README's `.venv/bin/mcpp`) the executable under test and a fresh $MCPP_HOME."""

    def __init__(self, workspace: Path, examples: Path, mcpp: str, env: dict[str, str]):
        self.root = workspace
        shutil.copytree(examples, workspace / "examples",
                        ignore=shutil.ignore_patterns("target", "compile_commands.json"))
        for bindir in (workspace / ".venv" / "bin", workspace / ".bin"):
            bindir.mkdir(parents=True)
            (bindir / "mcpp").symlink_to(mcpp)
        self.home = workspace / ".mcpp-home"
        self.env = {**env, "MCPP_HOME": str(self.home), "PATH": f"{workspace / '.bin'}:{env.get('PATH', '')}"}
        self.env.pop("TERM", None)
        self.cwd = workspace
        self.skipped: list[str] = []

    def run(self, command: str, timeout: float = 300) -> str:
        """What `command` prints (stdout and stderr through one pipe, in order); the session's
        directory follows its `cd`."""
        where = self.root / ".cwd"
        script = f"{command}\n__rc=$?\npwd > {where}\nexit $__rc\n"
        p = subprocess.run(["bash", "-c", script], cwd=self.cwd, env=self.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=timeout)
        if where.exists():
            self.cwd = Path(where.read_text().strip())
            where.unlink()
        out = p.stdout
        for real in {str(self.root.resolve()), str(self.root)}:
            out = out.replace(str(self.home).replace(str(self.root), real), "~/.mcpp").replace(real, "/…")
        return out

    def write(self, rel: str, text: str) -> None:
        path = self.cwd / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def play(self, document: list[Block], session: bool = False) -> list[str]:
        """Run every block of one document; the mismatches, each a message (empty when all match).
        With `session` the directory carries over from block to block."""
        failures: list[str] = []
        for block in document:
            if not session:
                self.cwd = self.root
            if block.marker("illustrative") is not None:
                continue
            needs = block.marker("needs")
            if needs:
                why = next((w for w in (requirement_missing(n.strip()) for n in needs.split(",")) if w), None)
                if why:
                    self.skipped.append(f"{block.where}: {why}")
                    continue
            target = block.marker("file")
            if target:
                self.write(target, block.text)
                continue
            if block.lang in SHELL_LANGS:
                failures.append(f"{block.where}: a `{block.lang}` block is neither run nor marked: make it a "
                                f"`console` block (`$ ` commands and their output) or mark it `<!-- illustrative -->`")
                continue
            if block.lang != "console":
                continue
            for cmd in commands(block):
                expected, actual = normalised("\n".join(cmd.expected)), normalised(self.run(cmd.command))
                if not matches(expected, actual):
                    failures.append(mismatch(block, cmd, expected, actual))
                    return failures  # later commands build on this one
        return failures
