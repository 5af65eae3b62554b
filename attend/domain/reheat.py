"""The reheat's text: the judgment layer in two wordings, read from ``skills/attend/reheat.md``.

The text lives in one place, the shipped data beside the skill (``attend/_data/skills`` in a wheel,
the repository's ``skills/`` in an editable install, as ``attend.setup.data`` finds them; that module
sits in a higher layer, so the two-line lookup is repeated here). A wording is the ``judgment``
section followed by the ``mcp`` or ``cli`` section, chosen by whether the session's MCP server is
live when it is printed (docs/architecture/sensors.md, "Disclosure").
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

BUDGET = 400  # bytes of one wording, at most (issue 18)
FILE = ("skills", "attend", "reheat.md")
_SECTION = re.compile(r"^## (\w+)\n(.*?)(?=^## |\Z)", re.M | re.S)


def path() -> Path:
    package = Path(__file__).resolve().parents[1]
    packaged = package.joinpath("_data", *FILE)
    return packaged if packaged.is_file() else package.parent.joinpath(*FILE)


def sections(text: str) -> dict[str, str]:
    """``## name`` sections of the file, each folded to one line (the comment above them is dropped)."""
    return {name: " ".join(body.split()) for name, body in _SECTION.findall(text)}


@cache
def _wordings() -> dict[str, str]:
    parts = sections(path().read_text(encoding="utf-8"))
    return {mode: f"{parts['judgment']} {parts[mode]}" for mode in ("mcp", "cli")}


def wording(mcp: bool) -> str:
    return _wordings()["mcp" if mcp else "cli"]
