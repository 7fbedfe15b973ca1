"""Every function of the `mcpp` struct is documented in docs/rules.md, the rule author's guide: a
function only the source knows about is one nobody can use."""
from __future__ import annotations

import re
from pathlib import Path

from mcpp.engine.program.api import McppApi

DOC = Path(__file__).resolve().parents[3] / "docs" / "rules.md"


def test_every_mcpp_function_is_documented_in_rules_md():
    text = DOC.read_text(encoding="utf-8")
    # `mcpp.name(` in prose or a snippet, or `name(` opening a cell of the function table.
    missing = [n for n in McppApi.FUNCTIONS if not re.search(rf"(?:mcpp\.|`){re.escape(n)}\(", text)]
    assert not missing, f"functions of the mcpp struct missing from {DOC.name}: {', '.join(missing)}"
