"""Renderings shared by the click frontend and the click-free fast paths: the one-line human summary
of a sent message (the --json document is ``attend.verbs.document``)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~3 ms to import on the hot paths; mypy reads this as true
if TYPE_CHECKING:
    from typing import Any


def sent_line(sent: Any) -> str:
    noun = "recipient" if sent.delivered == 1 else "recipients"
    # Live and parked apart: live is what peers lists; parked ones keep it until they are back.
    counts = f": {sent.live} live, {sent.parked} parked" if sent.delivered else ""
    thread = f", re {sent.re}" if sent.re else ""
    where = "#open" if sent.scope == "#open" else sent.to
    return f"sent {sent.id} to {where} ({sent.delivered} {noun}{counts}{thread})"
