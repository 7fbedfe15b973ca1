"""`provider(...)` and `depset(...)`: typed records and ordered, de-duplicated collections for
rule authors (docs/rules.md, "Providers and depsets").

Both are Starlark, defined in the prelude every `.star` file gets (evaluate.py): a record is a
struct with exactly the provider's fields, a depset a struct whose `to_list()` gives its items.
A wrong call (an unknown field, a depset of a non-list) is a `fail` inside the prelude, which
`outside_prelude` moves to the author's line that made the call.

Crossing packages, `mcpp.provide` turns them into plain data the evaluation cache stores as
JSON: a record becomes a dict tagged with its provider's identity (`_provider`), a depset a dict
`{"_depset": [...]}`; `mcpp.dep_info` turns them back. A provider's identity is where it is
declared (the file and line of its `provider(...)` call) unless it is given a `name`, so a rule
module's provider read in a dependent is the same provider the dependency's program used.
"""
from __future__ import annotations

PROVIDER_TAG = "_provider"  # key of a record's identity in its plain (JSON) form
DEPSET_TAG = "_depset"  # key of a depset's items in its plain form

TYPES_PRELUDE = f'''
_MCPP_KEY_REQUEST = struct(_mcpp_provider_key_request = True)

def _mcpp_caller():
    frames = [l for l in call_stack().splitlines() if l.strip().startswith("* ")]
    if len(frames) < 3:
        return "<unknown>"
    where = frames[-3].strip()[2:].split(", in ")[0]
    return where.split("/")[-1]

def provider(fields, doc = "", name = None):
    if type(fields) != "list" or [f for f in fields if type(f) != "string"]:
        fail("provider(): `fields` must be a list of strings")
    for f in fields:
        if not f or not (f[0].isalpha() or f[0] == "_") or not f.replace("_", "a").isalnum():
            fail("provider(): field `%s` is not an identifier" % f)
        if f.startswith("_"):
            fail("provider(): field `%s` starts with `_`, which mcpp keeps for itself" % f)
    if len({{f: True for f in fields}}) != len(fields):
        fail("provider(): `fields` names a field twice")
    if type(doc) != "string":
        fail("provider(): `doc` must be a string")
    if name != None and type(name) != "string":
        fail("provider(): `name` must be a string")
    key = name if name != None else _mcpp_caller()
    shown = name if name != None else "provider declared at " + key
    allowed = list(fields)

    def make(*args, **kwargs):
        if args == (_MCPP_KEY_REQUEST,):
            return key
        if args:
            fail("%s takes keyword arguments only (fields: %s)" % (shown, ", ".join(allowed)))
        for k in kwargs:
            if k not in allowed:
                fail("%s has no field `%s` (fields: %s)" % (shown, k, ", ".join(allowed)))
        values = {{f: kwargs.get(f) for f in allowed}}
        values["{PROVIDER_TAG}"] = key
        return struct(**values)

    return make

def _mcpp_provider_key(p):
    if type(p) != "function":
        fail("dep_info(): `provider` must be a provider (made by `provider(fields = [...])`), got " + type(p))
    return p(_MCPP_KEY_REQUEST)

def _mcpp_order_items(direct, transitive, order):
    if order not in ("default", "preorder", "postorder", "topological"):
        fail("depset(): unknown order `%s` (expected default, preorder, postorder or topological)" % order)
    if type(direct) != "list":
        fail("depset(): `direct` must be a list, got " + type(direct))
    if type(transitive) != "list":
        fail("depset(): `transitive` must be a list of depsets, got " + type(transitive))
    nested = []
    for t in transitive:
        if type(t) == "struct" and hasattr(t, "_mcpp_depset_items"):
            nested.append(t._mcpp_depset_items)
        elif type(t) == "list":
            nested.append(t)
        else:
            fail("depset(): every `transitive` entry must be a depset (or a list), got " + type(t))
    parts = [direct] + nested if order in ("preorder", "topological") else nested + [direct]
    seen = {{}}
    items = []
    for part in parts:
        for x in part:
            if type(x) in ("list", "dict", "struct", "function"):
                fail("depset(): items must be strings, numbers or bools, got " + type(x))
            if x not in seen:
                seen[x] = True
                items.append(x)
    return items

def depset(direct = [], transitive = [], order = "default"):
    items = _mcpp_order_items(direct, transitive, order)
    return struct(_mcpp_depset_items = items, to_list = lambda: list(items), order = order)

def _mcpp_plain(v):
    t = type(v)
    if t == "struct" and hasattr(v, "_mcpp_depset_items"):
        return {{"{DEPSET_TAG}": list(v._mcpp_depset_items)}}
    if t == "struct":
        return {{k: _mcpp_plain(getattr(v, k)) for k in dir(v)}}
    if t == "list" or t == "tuple":
        return [_mcpp_plain(x) for x in v]
    if t == "dict":
        return {{k: _mcpp_plain(x) for k, x in v.items()}}
    return v

def _mcpp_revive(v):
    t = type(v)
    if t == "dict" and "{DEPSET_TAG}" in v and len(v) == 1:
        return depset(v["{DEPSET_TAG}"], order = "preorder")
    if t == "dict" and "{PROVIDER_TAG}" in v:
        return struct(**{{k: _mcpp_revive(x) for k, x in v.items()}})
    if t == "list":
        return [_mcpp_revive(x) for x in v]
    if t == "dict":
        return {{k: _mcpp_revive(x) for k, x in v.items()}}
    return v

def _mcpp_typed_provide(**fields):
    _mcpp_provide(**{{k: _mcpp_plain(v) for k, v in fields.items()}})

def _mcpp_typed_dep_info(name, provider = None):
    info = _mcpp_dep_info(name)
    if provider == None:
        return struct(**{{k: _mcpp_revive(v) for k, v in info.items()}})
    key = _mcpp_provider_key(provider)
    found = [v for v in info.values() if type(v) == "dict" and v.get("{PROVIDER_TAG}") == key]
    if not found:
        fail("dep_info(`%s`): the dependency provided no record of %s" % (name, key))
    return _mcpp_revive(found[0])
'''

# `mcpp.<name>` bound to a prelude function of this module rather than the Python callable.
WRAPPERS = {"provide": "_mcpp_typed_provide", "dep_info": "_mcpp_typed_dep_info"}
