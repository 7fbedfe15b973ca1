"""`target/<profile>/.mcpp/payloads.json`: the environment of the last build.

It describes the last build, not the project: the same project built for another target or
accelerator set resolves other payloads, and the file then says so. Tools that read it (an IDE
finding the SDK's headers) must read it with that meaning.
"""
from __future__ import annotations

import json
import os

from mcpp.cas.atomic import PUBLIC, write_if_changed



def write(path: str, env, target: str, accel: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = {"target": target, "accel": accel, **env.to_json()}
    write_if_changed(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode(), mode=PUBLIC)
    return path
