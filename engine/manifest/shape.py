"""The one shape of a condition: `[target.<selector>.<section>]`, and nothing else
(docs/manifest.md, "Conditions").

A condition written anywhere else is refused with the one spelling that works:

- as a trailing key: `[xlings.workspace.linux]`, `[build.'cfg(unix)']`, `[dependencies.windows]`;
- as a sibling key beside a value: `foo = { path = "...", target = "linux" }`;
- as a platform-key object inside a value outside the top-level `[xlings]`:
  `cxxflags = { linux = [...], default = [...] }`.

The top-level platform-key object of a payload (`"xim:x" = { linux = "1", default = "2" }`) is
not a condition but the host axis, and stays legal there; under `[target.<selector>]` it
states the condition a second time and is refused naming the outer selector.
"""
from __future__ import annotations

from . import schema, selectors
from ..core.errors import ManifestError
from .reader import Reader, header, toml_key

# Keys that, beside a value, state where it applies (a second way to write a condition).
SIBLING_CONDITION_KEYS = ("target", "cfg", "platform", "platforms", "when", "condition", "if", "only-if") \
    + tuple(selectors.PREDICATES)
# Platform words as they appear in platform-key objects and as trailing keys.
_WORD_SELECTORS = {**{alias: f'cfg({name} = "{value}")' for alias, (name, value) in selectors.ALIASES.items()},
                   "macosx": 'cfg(os = "macos")'}


def selector_for(word: str) -> str | None:
    """The selector a condition word stands for, or None when `word` is not one."""
    if word in _WORD_SELECTORS:
        return _WORD_SELECTORS[word]
    if word.startswith("cfg("):
        return word
    try:
        return selectors.parse_selector(word).text
    except selectors.SelectorError:
        return None


def target_form(selector: str | None, section_path: tuple) -> str:
    """`[target.'cfg(os = "linux")'.xlings.workspace]`: the spelling a message recommends."""
    return header(("target", selector or "cfg(...)") + tuple(section_path))


def is_condition_key(key: str, value) -> bool:
    """A trailing key that states a condition: a platform word or selector with a table below."""
    return isinstance(value, dict) and (key == "default" or selector_for(key) is not None)


def refuse_trailing(r: Reader, keypath: tuple, section_path: tuple) -> ManifestError:
    key = keypath[-1]
    sel = selector_for(key)
    written = header(tuple(r.source_path(keypath)))
    if sel is not None and keypath[0] == "target":  # inside a block: one selector saying both
        sel = _conjunction(keypath[1], sel)
    if sel is None:  # `default`: there is no "otherwise" section; the unconditional one is it
        return r.fail(keypath, f"{written} writes a condition as a trailing key; the unconditional entries "
                               f"belong in {header(tuple(section_path))} itself and the conditional ones in "
                               f"{target_form(None, section_path)}", prefer="key")
    return r.fail(keypath, f"{written} writes a condition as a trailing key; a condition is written outside the "
                           f"section: {target_form(sel, section_path)}", prefer="key")


def check_siblings(r: Reader, spec: dict, keypath: tuple, section_path: tuple) -> None:
    """Refuse `{ path = "...", target = "linux" }`: the condition goes outside the section."""
    for key, value in spec.items():
        if key in SIBLING_CONDITION_KEYS or key in _WORD_SELECTORS:
            sel = None
            if isinstance(value, str):
                sel = selector_for(value) if key not in selectors.PREDICATES else f'cfg({key} = "{value}")'
            elif key in _WORD_SELECTORS:
                sel = _WORD_SELECTORS[key]
            head = f"`{key}` beside the value of `{toml_key(keypath[-1])}` writes a condition as a sibling key"
            if tuple(section_path) == ("features",):  # features themselves are never conditional
                f = toml_key(keypath[-1])
                raise r.fail(keypath + (key,), f"{head}; a feature is registered unconditionally, and what it "
                                               f"pulls in is conditioned outside it: "
                                               f"{target_form(sel, ('feature-deps', f))} or "
                                               f"{target_form(sel, ('feature-xlings', f))}", prefer="key")
            raise r.fail(keypath + (key,), f"{head}; a condition is written outside the section: "
                                           f"{target_form(sel, section_path)}", prefer="key")


def is_platform_object(value) -> bool:
    """`{ linux = ..., default = ... }`: a table whose keys are platform words."""
    return isinstance(value, dict) and bool(value) and all(
        k in schema.PLATFORM_KEYS or k in _WORD_SELECTORS for k in value)


def refuse_platform_object(r: Reader, keypath: tuple, value: dict, section_path: tuple) -> ManifestError:
    """A platform-key object outside the top-level [xlings]: a condition inside a value."""
    first = next(iter(value))
    return r.fail(keypath, f"a platform-key object ({_object(value)}) writes a condition inside "
                           f"a value; outside the top-level [xlings] a condition is written outside the section: "
                           f"{target_form(selector_for(first), section_path)}")


def refuse_two_place(r: Reader, keypath: tuple, value: dict, block_key: str, section_path: tuple) -> ManifestError:
    """A platform-key object under a selector: the outer selector already says where; the inner
    object says it again, and the two could disagree."""
    return r.fail(keypath, f"`{keypath[-1]}` states its condition twice: the outer selector "
                           f"[target.{toml_key(block_key)}] already says where it applies, and the platform-key "
                           f"object ({_object(value)}) says it again; write a plain version under "
                           f"{header(('target', block_key) + tuple(section_path))} and drop the object, or "
                           f"drop the selector and keep the object in the top-level {header(tuple(section_path))}")


def _object(value: dict) -> str:
    return "{ " + ", ".join(f"{k} = ..." for k in value) + " }"


def _conjunction(outer: str, inner: str) -> str:
    """`cfg(all(<outer>, <inner>))`, when both are cfg(...); else the inner one alone."""
    if outer.startswith("cfg(") and inner.startswith("cfg("):
        return f"cfg(all({outer[4:-1]}, {inner[4:-1]}))"
    return inner
