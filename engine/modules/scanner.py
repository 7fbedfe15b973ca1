"""C++20 module scanner: which module a source file declares and which modules it imports.

Why our own: the build graph must be known before anything compiles, and running the preprocessor
(or clang-scan-deps) over every source on every build is slow and toolchain-specific. Instead this
scanner reads the text once, line by line, the way P1857 defines module directives: a declaration
is recognised only when `export`/`module`/`import` is the first token of a logical line (after
whitespace and comments) and the next token fits the grammar (`module` + name, `:` or `;`;
`import` + name, `:`, `<` or a string), so `auto module = 1;` or `import(3);` are ordinary code.
Comments, string, character and raw-string literals are skipped, and backslash-newline splices
are applied first (positions are reported in the original text).

Because the preprocessor does not run, what it could change is not guessed: an import or module
declaration inside `#if`/`#ifdef`/... raises `NeedsPreprocessor` (a `ScanError`), which a caller
with a preprocessing scanner (clang-scan-deps, p1689.py) answers by running it, and which is
refused otherwise (gcc 12 has none); header units (`import <vector>;`) and a second module
declaration are a `ScanError`.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from mcpp.engine.core.errors import Position, ScanError
from mcpp.engine.core.lazy_re import lazy_compile


@dataclass(frozen=True)
class ModuleUnit:
    """What a translation unit declares about C++ modules: its name and what it imports."""
    module: str | None  # "a.b", or "a.b:part" for a partition; None for an ordinary TU
    exported: bool  # `export module X;`: interface unit or interface partition
    imports: tuple[str, ...]  # explicit imports, source order, deduplicated; ":p" resolved
    global_fragment: bool  # the unit starts with `module;`
    import_lines: tuple[int, ...]  # 1-based line of each entry of `imports`


_ORDINARY = ModuleUnit(None, False, (), False, ())


class NeedsPreprocessor(ScanError):
    """A module directive sits inside a preprocessor conditional: only a scanner that runs the
    preprocessor knows whether it counts. `partial` is what the text shows with every branch
    taken (the line of each import, whether the unit opens with `module;`)."""

    def __init__(self, message: str, pos: Position, partial: ModuleUnit):
        super().__init__(message, pos)
        self.partial = partial

_SPLICE = lazy_compile(r"\\\r?\n")
# What may open a logical line: whitespace and comments, then a directive `#` or a keyword.
_HEAD = lazy_compile(
    r"(?:[ \t\f\v\r]+|//[^\n]*|/\*.*?\*/)*"
    r"(?:(?P<hash>\#)|(?P<kw>export|module|import)(?![\w$]))?",
    re.S,
)
_DIRECTIVE = lazy_compile(r"[ \t\f\v\r]*(\w*)")
_SPECIAL = lazy_compile(r"[\n\"'/]")  # outside a line's first token, only these matter
_STRING = lazy_compile(r'"(?:[^"\\\n]|\\.)*"')
_CHAR = lazy_compile(r"'(?:[^'\\\n]|\\.)*'")
_RAW = lazy_compile(r'"([^ ()\\\t\v\f\n"]{0,16})\(.*?\)\1"', re.S)
_RAW_PREFIXES = ("R", "u8R", "uR", "UR", "LR")
# One token of a declaration, after whitespace/comments (declarations may span lines).
_TOKEN = lazy_compile(
    r"(?:\s+|//[^\n]*|/\*.*?\*/)*(?:(?P<tok>[^\W\d]\w*|::|\"(?:[^\"\\\n]|\\.)*\"|.)|$)", re.S
)
_IDENT = lazy_compile(r"[^\W\d]\w*")
_WRITTEN = lazy_compile(r"[^;\n]*;?")

_CONDITIONAL = (
    "{} inside a preprocessor conditional is not supported; the module scanner does not run "
    "the preprocessor (move the {} out of the #if block)"
)


def scan_source(text: str, path: str) -> ModuleUnit:
    """Scan one C++ source file's text. Raises ScanError for what it refuses (see module doc)."""
    if "import" not in text and "module" not in text and "\\" not in text:
        return _ORDINARY
    scanner = _ModuleDeclScanner(text, path)  # splices backslash-newlines (`imp\<newline>ort` is `import`)
    if "import" not in scanner.s and "module" not in scanner.s:
        return _ORDINARY
    return scanner.run()


def _is_ident(tok: str) -> bool:
    return _IDENT.fullmatch(tok) is not None


class _ModuleDeclScanner:
    def __init__(self, text: str, path: str):
        self.orig, self.path = text, path
        self.cut_at: list[int] = []  # spliced offset of each removed backslash-newline ...
        self.cut_sum: list[int] = []  # ... and the characters removed up to and including it
        if "\\\n" in text or "\\\r\n" in text:
            pieces, last, removed = [], 0, 0
            for m in _SPLICE.finditer(text):
                pieces.append(text[last : m.start()])
                self.cut_at.append(m.start() - removed)
                removed += m.end() - m.start()
                self.cut_sum.append(removed)
                last = m.end()
            pieces.append(text[last:])
            text = "".join(pieces)
        self.s = text
        self.depth = 0  # preprocessor conditional nesting
        self.module: str | None = None
        self.exported = False
        self.decl_line = 0
        self.gmf = False
        self.imports: dict[str, int] = {}  # name -> line, insertion-ordered
        self.conditional: tuple[str, int] | None = None  # the first directive inside an #if

    # -- positions ---------------------------------------------------------------------------
    def pos(self, off: int) -> Position:
        k = bisect_right(self.cut_at, off)
        off += self.cut_sum[k - 1] if k else 0
        line = self.orig.count("\n", 0, off) + 1
        return Position(self.path, line, off - self.orig.rfind("\n", 0, off))

    def fail(self, message: str, off: int) -> ScanError:
        return ScanError(message, self.pos(off))

    # -- the single pass -----------------------------------------------------------------------
    def run(self) -> ModuleUnit:
        s, n, off, at_start = self.s, len(self.s), 0, True
        while off < n:
            if at_start:
                at_start = False
                m = _HEAD.match(s, off)
                off = m.end()
                if m.group("hash"):
                    d = _DIRECTIVE.match(s, off)
                    off = d.end()
                    if d.group(1) in ("if", "ifdef", "ifndef"):
                        self.depth += 1
                    elif d.group(1) == "endif":
                        self.depth = max(0, self.depth - 1)
                elif m.group("kw"):
                    off = self.declaration(m.start("kw"))
                continue
            m = _SPECIAL.search(s, off)
            if m is None:
                break
            off = m.start()
            c = s[off]
            if c == "\n":
                off, at_start = off + 1, True
            elif c == "/":
                nxt = s[off + 1 : off + 2]
                if nxt == "/":
                    end = s.find("\n", off)
                    off = n if end < 0 else end
                elif nxt == "*":
                    end = s.find("*/", off + 2)
                    off = n if end < 0 else end + 2
                else:
                    off += 1
            elif c == '"':
                r = _RAW.match(s, off) if self.raw_prefix(off) else None
                m = r or _STRING.match(s, off)
                off = m.end() if m else off + 1
            else:  # "'": a character literal, or a digit separator as in 1'000'000
                m = None if self.in_number(off) else _CHAR.match(s, off)
                off = m.end() if m else off + 1
        imports = tuple(self.imports)
        unit = ModuleUnit(self.module, self.exported, imports, self.gmf, tuple(self.imports.values()))
        if self.conditional is not None:
            message, off = self.conditional
            raise NeedsPreprocessor(message, self.pos(off), unit)
        return unit

    def inside_conditional(self, what: str, directive: str, off: int) -> None:
        """Note the first module directive under `#if`; scanning goes on, every branch taken."""
        if self.depth and self.conditional is None:
            self.conditional = (_CONDITIONAL.format(what, directive), off)

    def raw_prefix(self, off: int) -> bool:
        s = self.s
        for p in _RAW_PREFIXES:
            start = off - len(p)
            if start >= 0 and s.startswith(p, start) and not (start and _word_char(s[start - 1])):
                return True
        return False

    def in_number(self, off: int) -> bool:
        s, k = self.s, off
        while k > 0 and (_word_char(s[k - 1]) or s[k - 1] in ".'"):
            k -= 1
        return k < off and (s[k].isdigit() or (s[k] == "." and s[k + 1].isdigit()))

    # -- declarations ----------------------------------------------------------------------------
    def token(self, off: int) -> tuple[str, int, int]:
        """The next token after `off` ("" at the end): (text, start, end)."""
        m = _TOKEN.match(self.s, off)
        if m.group("tok") is None:
            return "", m.end(), m.end()
        return m.group("tok"), m.start("tok"), m.end()

    def declaration(self, start: int) -> int:
        """Parse a possible declaration at `start`; return the offset to resume scanning at."""
        word, ks, ke = self.token(start)
        resume, exported = ke, False
        if word == "export":
            word, ks, ke = self.token(ke)
            if word not in ("module", "import"):
                return resume
            exported = True
        nxt, ns, ne = self.token(ke)
        if word == "module":
            if nxt not in (";", ":") and not _is_ident(nxt):
                return resume
            return self.module_decl(exported, ks, nxt, ns, ne)
        if nxt not in ("<", ":") and not nxt.startswith('"') and not _is_ident(nxt):
            return resume
        return self.import_decl(start, ks, nxt, ns, ne)

    def module_decl(self, exported: bool, ks: int, nxt: str, ns: int, ne: int) -> int:
        what = "module declaration"
        if nxt == ":":  # `module :private;` opens the private fragment: nothing to record
            tok, _, end = self.token(ne)
            if tok != "private" or exported:
                raise self.fail(f"malformed {what}: expected a module name", ks)
            return self.expect_semicolon(end, what, ks)
        self.inside_conditional("module declaration", what, ks)
        if nxt == ";":
            if exported:
                raise self.fail(f"malformed {what}: `export module;` needs a module name", ks)
            self.gmf = self.gmf or self.module is None
            return ne
        name, end = self.name(ns, what, ks)
        tok, _, tend = self.token(end)
        if tok == ":":
            part, end = self.name(tend, what, ks)
            name = f"{name}:{part}"
        end = self.expect_semicolon(end, what, ks)
        line = self.pos(ks).line
        if self.module is not None and self.conditional is not None:
            return end  # alternatives under #if/#else: the preprocessing scanner picks one
        if self.module is not None:
            raise self.fail(
                f"second module declaration in one file (`{name}` at line {line}; the first, "
                f"`{self.module}`, is at line {self.decl_line}): a source file declares at most "
                "one module",
                ks,
            )
        self.module, self.exported, self.decl_line = name, exported, line
        return end

    def import_decl(self, start: int, ks: int, nxt: str, ns: int, ne: int) -> int:
        what = "import declaration"
        if nxt == "<" or nxt.startswith('"'):
            rest = _WRITTEN.match(self.s, ks).group()  # to the `;` or the end of the line
            written = " ".join((self.s[start:ks] + rest).split())
            raise self.fail(
                f"header units are not supported: `{written}` "
                "(use #include in the global module fragment)",
                ks,
            )
        self.inside_conditional("`import`", "import", ks)
        if nxt == ":":
            part, end = self.name(ne, what, ks)
            if self.module is None:
                raise self.fail(
                    f"`import :{part};` imports a partition, but this file declares no module", ks
                )
            name = f"{self.module.split(':')[0]}:{part}"
        else:
            name, end = self.name(ns, what, ks)
        end = self.expect_semicolon(end, what, ks)
        self.imports.setdefault(name, self.pos(ks).line)
        return end

    def name(self, off: int, what: str, ks: int) -> tuple[str, int]:
        """A dotted module name starting at `off`; returns it and the offset after it."""
        parts = []
        while True:
            tok, _, end = self.token(off)
            if not _is_ident(tok):
                found = _shown(tok)
                raise self.fail(f"malformed {what}: expected a module name, found {found}", ks)
            parts.append(tok)
            dot, _, after = self.token(end)
            if dot != ".":
                return ".".join(parts), end
            off = after

    def expect_semicolon(self, off: int, what: str, ks: int) -> int:
        tok, _, end = self.token(off)
        if tok == "[":  # attributes: [[...]]
            depth = 0
            while tok:
                depth += (tok == "[") - (tok == "]")
                tok, _, end = self.token(end)
                if depth == 0:
                    break
        if tok != ";":
            raise self.fail(f"malformed {what}: expected `;`, found {_shown(tok)}", ks)
        return end


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_" or c == "$"


def _shown(tok: str) -> str:
    return f"`{tok}`" if tok else "end of file"
