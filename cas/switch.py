"""Yes/no settings written as text (`MCPP_REMOTE_UPLOAD=1`, `MCPP_PAYLOAD_INDEX_INSECURE=yes`).

Every such setting accepts the same spellings, so a value that turns one on turns every one on;
a value that is neither is the caller's error to report (it names the variable).
"""
from __future__ import annotations

ON = frozenset({"1", "true", "yes", "on"})
OFF = frozenset({"0", "false", "no", "off", ""})
SPELLINGS = "1 or 0 (also true/false, yes/no, on/off)"


def parse_switch(text: str) -> bool | None:
    """True or False for an accepted spelling (case and surrounding blanks ignored), else None."""
    value = text.strip().lower()
    if value in ON:
        return True
    return False if value in OFF else None
