"""How long output meets a terminal: times in the reader's zone, bodies wrapped to the width with
continuation lines hung under the body, and the pager for output longer than the screen.

Only layout happens here. A body reaches ``hang`` as the text to show: whatever makes a body safe to
show (escaping anything that could pass for attend's own framing) runs before, on the whole body,
and wrapping never adds a line that starts at the left margin, so it cannot undo that.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import textwrap

import click


def when(stamp: str, utc: bool = False) -> str:
    """An ISO 8601 UTC time (the --json form) as the reader's local time with the zone named, or in
    UTC; ``inbox --since`` takes this form back (attend/verbs/inbox_filters.py)."""
    at = dt.datetime.fromisoformat(stamp)
    if utc:
        return at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    local = at.astimezone()
    return local.strftime("%Y-%m-%d %H:%M:%S ") + zone(local)


def clock(stamp: str, utc: bool = False) -> str:
    """The time of day alone, for one-line-per-message views (the zone is said once, by ``zone``)."""
    at = dt.datetime.fromisoformat(stamp)
    return (at.astimezone(dt.UTC) if utc else at.astimezone()).strftime("%H:%M:%S")


def zone(at: dt.datetime | None = None, utc: bool = False) -> str:
    """The zone's abbreviation (CET, EST, UTC), or its offset where the zone has no name (+0530)."""
    if utc:
        return "UTC"
    local = (at or dt.datetime.now()).astimezone()
    name = local.strftime("%Z")
    return name if name.isalpha() else local.strftime("%z")


def width() -> int | None:
    """Columns to wrap to: the terminal's when stdout is one, or $COLUMNS when set; None (do not
    wrap) when the output goes to a pipe or a file, where a script wants each line whole."""
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def hang(label: str, body: str, columns: int | None) -> str:
    """``label`` then ``body``, every further line (the body's own, and wrapped ones) indented under
    the body's first character: nothing in a body starts a line of its own at the margin."""
    indent = " " * len(label)
    room = max(20, columns - len(label)) if columns else None
    out: list[str] = []
    for line in body.split("\n") or [""]:
        if room is None or len(line) <= room:
            out.append(line)
        else:
            out += textwrap.wrap(line, room, break_on_hyphens=False, replace_whitespace=False) or [""]
    # A blank body line keeps its indent: an empty line would end the block and let what follows
    # pass for a message of its own.
    return "\n".join([label + out[0], *(indent + line.rstrip() for line in out[1:])])


def show(text: str) -> None:
    """Print ``text``; through the pager when stdout is a terminal and it is longer than the screen."""
    if not sys.stdout.isatty() or text.count("\n") + 1 < shutil.get_terminal_size().lines:
        click.echo(text)
        return
    os.environ.setdefault("LESS", "FRX")  # as git and gh: raw colours, no screen clear, exit at the end
    click.echo_via_pager(text)
