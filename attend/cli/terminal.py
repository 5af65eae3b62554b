"""How long output meets a terminal: times in the reader's zone, bodies wrapped to the width with
continuation lines hung under the body, and the pager for output longer than the screen.

Only layout happens here. A body reaches ``hang`` as the text to show: whatever makes a body safe to
show (escaping anything that could pass for attend's own framing) runs before, on the whole body,
and wrapping never adds a line that starts at the left margin, so it cannot undo that.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap

import click

from attend.cli.render import clock as clock  # the times live beside the tables: peers shows one too
from attend.cli.render import when as when
from attend.cli.render import zone as zone


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
