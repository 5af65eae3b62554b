"""Renderings shared by the click frontend and the click-free fast paths: the --json document and
the one-line human summary of a sent message."""

from __future__ import annotations

import dataclasses

TYPE_CHECKING = False  # typing costs ~3 ms to import on the hot paths; mypy reads this as true
if TYPE_CHECKING:
    from typing import Any


def as_dict(result: Any) -> dict[str, Any]:
    """A verb result as the one JSON document --json prints (always with a warnings list)."""
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        data = dataclasses.asdict(result)
    else:
        data = dict(result)
    data.setdefault("warnings", [])
    return data


def sent_line(sent: Any) -> str:
    noun = "recipient" if sent.delivered == 1 else "recipients"
    thread = f", re {sent.re}" if sent.re else ""
    where = "#open" if sent.scope == "#open" else sent.to
    return f"sent {sent.id} to {where} ({sent.delivered} {noun}{thread})"
