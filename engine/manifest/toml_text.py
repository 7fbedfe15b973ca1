"""TOML values spelled the way a manifest writes them, for the commands that edit or rewrite
one (`mcpp add`, `mcpp package`): strings as basic strings, booleans, arrays, and inline tables
spaced as Cargo spaces them (`{ version = "1.2", features = ["a"] }`)."""
from __future__ import annotations

import json


def value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return inline_table(list(v.items()))
    return json.dumps(str(v), ensure_ascii=False)  # a JSON string is a TOML basic string


def inline_table(fields: list[tuple[str, object]]) -> str:
    return "{ " + ", ".join(f"{k} = {value(v)}" for k, v in fields) + " }" if fields else "{}"
