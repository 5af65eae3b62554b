"""`attend search` without click: a search is a command a person runs often and waits for, and click's
import is about three interpreter starts. The command line is read here (the query's words, ``--limit N``,
``--json``, ``--utc``, ``--from``, ``--room``, ``--since``, ``--re``; ``--opt=value`` too); anything else
(``--help``, an unknown flag) goes to click (attend/cli/search.py), which shares the rendering below.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs ~3 ms to import; mypy reads this as true
if TYPE_CHECKING:
    from typing import TextIO

    from attend.verbs.search_core import Found

VALUED = {"--limit": "limit", "-n": "limit", "--from": "sender", "--room": "room", "--since": "since", "--re": "re"}
FLAGS = ("--json", "--utc")
BOLD, PLAIN = "\x1b[1m", "\x1b[0m"


class Request:
    """The command line, read: what search_core.find takes (the verb's own request would import dataclasses)."""

    def __init__(self, query: str, limit: int, room: tuple[str, ...], **values: str) -> None:
        self.query, self.limit, self.room = query, limit, room
        self.sender, self.since, self.re = values.get("sender"), values.get("since"), values.get("re")


def parse(args: list[str]) -> tuple[Request, bool, bool] | None:
    """``args``: the command line after ``attend search``. None: leave it to click."""
    words: list[str] = []
    values: dict[str, str] = {}
    rooms: list[str] = []
    flags: set[str] = set()
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            words += args[i:]
            break
        if arg in FLAGS:
            flags.add(arg)
            continue
        key, eq, inline = arg.partition("=")
        if key in VALUED and (eq or i < len(args)):
            value = inline if eq else args[i]
            i += 0 if eq else 1
            if VALUED[key] == "room":
                rooms.append(value)
            else:
                values[VALUED[key]] = value
            continue
        if arg.startswith("--") or arg in ("-h", "-n"):
            return None  # --help, -h, an unknown flag, a valued flag with no value: click says what is wrong
        words.append(arg)  # -word (leave it out) is a query word
    limit = values.pop("limit", "10")
    if not limit.isdigit():
        return None
    req = Request(" ".join(words), int(limit), tuple(rooms), **values)
    return req, "--json" in flags, "--utc" in flags


def run(args: list[str], out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int | None:
    parsed = parse(args)
    if parsed is None:
        return None
    req, as_json, utc = parsed
    from attend.cli import render
    from attend.domain.core.said import REPORTED
    from attend.domain.sessions.context import Context
    from attend.errors import AttendError
    from attend.verbs import search_core

    try:
        result = search_core.find(Context.default(), req.query, req.limit, req.sender, req.room, req.since, req.re)
    except AttendError as e:
        return render.refused(e, as_json, out, err)
    if as_json:
        out.write(render.document_line(search_core.document(result)))
        return 0
    text = search_text(result, utc, out.isatty())
    if text:
        out.write(text + "\n")
    for note in result.notes:
        err.write(f"attend: note: {note}\n")
    for warning in result.warnings:
        if warning not in REPORTED:
            err.write(f"attend: warning: {warning}\n")
    return 0


def search_text(result: Found, utc: bool = False, tty: bool = False) -> str:
    """The results, two lines each: when, room, sender and id; then the snippet (the verb's result too)."""
    from attend.cli.render import when_at
    from attend.domain.core import framing
    from attend.layout import name_time
    from attend.verbs.search_core import room_label

    if not result.results:
        return "no messages found"
    blocks = []
    for f in result.results:
        snippet = marked(f.snippet) if tty else f.snippet
        at = f"{when_at(name_time(f.id), utc)}"  # f.at is this time, to the second, in ISO 8601
        blocks.append(f"{at}  {room_label(f.room)}  {framing.label(f.sender)}  {f.id}\n  {snippet}")
    return "\n".join(blocks)


def marked(snippet: str) -> str:
    """``**match**`` as bold on a terminal (the snippet holds no control characters of its own)."""
    parts = snippet.split("**")
    if len(parts) % 2 == 0:  # an odd count of marks: the body held some of its own; left as they are
        return snippet
    return "".join(p if i % 2 == 0 else BOLD + p + PLAIN for i, p in enumerate(parts))
