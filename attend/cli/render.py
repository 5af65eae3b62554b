"""Renderings shared by the click frontend and the click-free fast paths: the one-line human summary
of a sent message (the --json document is ``attend.verbs.document``)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~3 ms to import on the hot paths; mypy reads this as true
if TYPE_CHECKING:
    from typing import Any


def sent_line(sent: Any) -> str:
    return sent_text(sent.id, sent.scope, sent.to, sent.re, sent.delivered, sent.live)


def sent_text(id: str, scope: str, to: str, re: str | None, delivered: int, live: int) -> str:
    """The line for a sent message (the fast send path has no ``Sent``, only these)."""
    noun = "recipient" if delivered == 1 else "recipients"
    # Live and parked apart: live is what peers lists; parked ones keep it until they are back.
    counts = f": {live} live, {delivered - live} parked" if delivered else ""
    thread = f", re {re}" if re else ""
    where = "#open" if scope == "#open" else to
    return f"sent {id} to {where} ({delivered} {noun}{counts}{thread})"
