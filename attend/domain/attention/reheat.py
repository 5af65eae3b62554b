"""The reheat's text: the judgment layer in two wordings, read from ``skills/attend/reheat.md``.

The text lives in one place, the shipped data beside the skill (``attend/_data/skills`` in a wheel,
the repository's ``skills/`` in an editable install, as ``attend.setup.data`` finds them; that module
sits in a higher layer, so the two-line lookup is repeated here). A wording is the ``judgment``
section followed by the ``mcp`` or ``cli`` section, chosen by whether the session's MCP server is
live when it is printed (docs/architecture/sensors.md, "Disclosure").
"""

from __future__ import annotations

import os
import re
from functools import cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

BUDGET = 400  # bytes of one wording, at most
FILE = ("skills", "attend", "reheat.md")
_SECTION = re.compile(r"^## (\w+)\n(.*?)(?=^## |\Z)", re.M | re.S)


def path() -> Path:
    from pathlib import Path

    return Path(_file())


def _file() -> str:
    """``path()`` as a str: the loop says the reheat without importing pathlib (~0.6 MB a loop)."""
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    packaged = os.path.join(package, "_data", *FILE)
    return packaged if os.path.isfile(packaged) else os.path.join(os.path.dirname(package), *FILE)


def sections(text: str) -> dict[str, str]:
    """``## name`` sections of the file, each folded to one line (the comment above them is dropped)."""
    return {name: " ".join(body.split()) for name, body in _SECTION.findall(text)}


@cache
def _wordings() -> dict[str, str]:
    with open(_file(), encoding="utf-8") as f:
        parts = sections(f.read())
    return {mode: f"{parts['judgment']} {parts[mode]}" for mode in ("mcp", "cli")}


def wording(mcp: bool) -> str:
    return _wordings()["mcp" if mcp else "cli"]
