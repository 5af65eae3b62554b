"""Renderings shared by the click frontend and the click-free fast paths (send, peers, status): the
one-line summary of a sent message, and small tables (the --json document is
``attend.verbs.document``). No click here."""

from __future__ import annotations

from attend.domain.core import framing

TYPE_CHECKING = False  # typing costs ~3 ms to import on the hot paths; mypy reads this as true
if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Sequence
    from typing import Any, TextIO

    from attend.errors import AttendError


def refused(e: AttendError, as_json: bool, out: TextIO, err: TextIO) -> int:
    """A verb's refusal on a click-free path, as the click frontend reports it; returns the exit code."""
    from attend.cli import failure  # only a refusal pays for it

    failure.report(e.code, f"attend: {e}", as_json, out, err)
    return e.exit_code


def document_line(result: Any) -> str:
    """A verb result's --json document, as one line."""
    import json

    from attend.verbs import document

    return json.dumps(document(result), ensure_ascii=False) + "\n"


def sent_line(sent: Any) -> str:
    rows = [(r.name, r.id, r.kind, r.outcome) for r in sent.recipients]
    return sent_text(sent.id, sent.scope, sent.to_name or sent.to, sent.re, rows, sent.humans, sent.room)


def sent_text(
    id: str,
    scope: str,
    to: str,
    re: str | None,
    rows: Sequence[tuple[str, str, str, str]],
    humans: Sequence[str] = (),
    room: str = "",
) -> str:
    """The line for a sent message (the fast send path has no ``Sent``, only these): its recipients
    counted by outcome, naming those not delivered (attend.domain.core.outcomes.summary). A name that
    resolved to a human's mailbox is said, so a name taken for a session's is noticed; a message for
    another host's session or human (its room ``d-``/``h-<id>@<host>``) is queued for the relay."""
    from attend.domain.core.ids import sent_form  # the id's short form, with no listing on the send path
    from attend.domain.core.outcomes import DELIVERED, summary

    id, re = sent_form(id), (sent_form(re) if re else re)
    if room.startswith(("d-", "h-")) and "@" in room:
        thread = f", re {re}" if re else ""
        said = "" if all(r[3] == DELIVERED for r in rows) else f": {framing.inline(summary(list(rows)))}"
        return f"sent {id} to {to} (queued for the relay{said}{thread})"
    thread = f", re {re}" if re else ""
    where = "#open" if scope == "#open" else to
    people = (
        f"; {', '.join(humans)} {'is a human' if len(humans) == 1 else 'are humans'}, not a session" if humans else ""
    )
    return f"sent {id} to {where} ({framing.inline(summary(list(rows)))}{thread}){people}"


def table(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None) -> str:
    all_rows = [list(header)] if header else []
    # A cell may hold a session's name or a folder's: one line each, controls escaped, so no cell
    # can add a row (attend.domain.core.framing).
    all_rows += [[framing.inline(cell) for cell in r] for r in rows]
    if not all_rows:
        return ""
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(all_rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in all_rows]
    return "\n".join(lines)


def when(stamp: str, utc: bool = False) -> str:
    """An ISO 8601 UTC time (the --json form) as the reader's local time with the zone named, or in
    UTC; ``inbox --since`` takes this form back (attend/verbs/inbox_filters.py)."""
    import datetime as dt

    at = dt.datetime.fromisoformat(stamp)
    if utc:
        return at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    local = at.astimezone()
    return local.strftime("%Y-%m-%d %H:%M:%S ") + zone(local)


def when_at(at: float, utc: bool = False) -> str:
    """``when`` for seconds since the epoch, on the time module alone: a search's results show a time
    each, and datetime costs its process ~1.2 ms (docs/benchmarks.md, "Search")."""
    import time

    if utc:
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
    local = time.localtime(at)
    name = time.strftime("%Z", local)
    return time.strftime("%Y-%m-%d %H:%M:%S ", local) + (name if name.isalpha() else time.strftime("%z", local))


def clock(stamp: str, utc: bool = False) -> str:
    """The time of day alone, for one-line-per-message views (the zone is said once, by ``zone``)."""
    import datetime as dt

    at = dt.datetime.fromisoformat(stamp)
    return (at.astimezone(dt.UTC) if utc else at.astimezone()).strftime("%H:%M:%S")


def zone(at: dt.datetime | None = None, utc: bool = False) -> str:
    """The zone's abbreviation (CET, EST, UTC), or its offset where the zone has no name (+0530)."""
    import datetime as dt

    if utc:
        return "UTC"
    local = (at or dt.datetime.now()).astimezone()
    name = local.strftime("%Z")
    return name if name.isalpha() else local.strftime("%z")
