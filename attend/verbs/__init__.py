"""Verbs: one module each, a typed request and result, one description string, and no printing.

Frontends (attend.cli, attend.mcp) parse input into a request, call ``run`` and render the result;
``document`` is the one JSON form of a result, the ``--json`` output and the MCP structured result alike.
"""

from __future__ import annotations

import dataclasses

TYPE_CHECKING = False  # typing costs ~3 ms to import, and `send` imports this package
if TYPE_CHECKING:
    from typing import Any


def document(result: Any) -> dict[str, Any]:
    """A verb result as its JSON document (always with a warnings list)."""
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        data: dict[str, Any] = dataclasses.asdict(result)
    else:
        data = dict(result)
    data.setdefault("warnings", [])
    return data
