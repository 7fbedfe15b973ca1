"""The manifest a package is published with (engine/publish/manifest_text.py): path
dependencies that state a version become index requirements in every dependency section,
path-only dev-dependencies are dropped, the rest is refused at its line, `[workspace]` goes,
and everything else stays as written."""
from __future__ import annotations

import pytest

from mcpp.engine.core.errors import McppError
from mcpp.engine.publish.manifest_text import published_manifest

SOURCE = """\
[package]
name = "app"   # kept
version = "1.0.0"

[workspace]
members = ["x"]

[dependencies]
core = { path = "../core", version = "0.2", features = ["a"] }  # sibling
acme.util = { path = "../util", version = "~1.1" }
plain = "1.0"

[dependencies.other]
thing = { path = "../thing", version = "3" }

[dev-dependencies]
helper = { path = "../helper" }
checked = { path = "../checked", version = "0.1" }

[feature-deps.fast]
simd = { path = "../simd", version = "2.0" }

[target.'cfg(os = "linux")'.dependencies]
epoll = { path = "../epoll", version = "0.9" }

[build-dependencies.tools]
path = "../tools"
version = "0.5"
"""

PUBLISHED = """\
[package]
name = "app"   # kept
version = "1.0.0"

[dependencies]
core = { version = "0.2", features = ["a"] }  # sibling
acme.util = { version = "~1.1" }
plain = "1.0"

[dependencies.other]
thing = { version = "3" }

[dev-dependencies]
checked = { version = "0.1" }

[feature-deps.fast]
simd = { version = "2.0" }

[target.'cfg(os = "linux")'.dependencies]
epoll = { version = "0.9" }

[build-dependencies.tools]
version = "0.5"
"""


def test_path_dependencies_become_index_requirements_and_the_rest_stays():
    assert published_manifest(SOURCE, "mcpp.toml") == PUBLISHED


@pytest.mark.parametrize("section", ["dependencies", "build-dependencies", "feature-deps.fast",
                                     "target.'cfg(os = \"linux\")'.dependencies"])
def test_a_path_dependency_without_version_is_refused_at_its_line(section):
    text = f'[package]\nname = "app"\nversion = "1.0.0"\n\n[{section}]\nlocal = {{ path = "../local" }}\n'
    with pytest.raises(McppError) as e:
        published_manifest(text, "app/mcpp.toml")
    assert str(e.value.pos) == "app/mcpp.toml:6:1"
    assert f"dependency `local` in [{section}] is a path dependency without a `version`" in e.value.message
