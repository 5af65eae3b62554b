"""`attend chat` without click: the console entry routes a plain ``chat`` or ``chat --room ROOM`` here,
so the seat opens and the screen starts without click and the CLI's command table (~25 ms of the
start). Anything else on a chat line (``--help``, a bad option) goes to click, whose command
(attend/cli/chat.py) runs the same two steps: ``open_seat`` then ``show``."""

from __future__ import annotations

import gc
import sys

from attend.domain.sessions.context import Context
from attend.errors import AttendError, UsageError
from attend.verbs import chat as chat_verb


def room_of(args: list[str]) -> tuple[bool, str | None]:
    """(whether this path takes the arguments after ``chat``, the --room given)."""
    if not args:
        return True, None
    if len(args) == 2 and args[0] == "--room" and not args[1].startswith("-"):
        return True, args[1]
    if len(args) == 1 and args[0].startswith("--room=") and len(args[0]) > len("--room="):
        return True, args[0].split("=", 1)[1]
    return False, None


def open_seat(room: str | None) -> tuple[Context, chat_verb.Seat]:
    """Every refusal is an AttendError here, before any screen: a refused spool (foreign owner,
    group-writable), no terminal, a Claude session, an unknown room."""
    ctx = Context.default()  # the spool is opened and checked here
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("attend chat needs a terminal; attend tail and attend inbox work without one")
    return ctx, chat_verb.run(ctx, chat_verb.ChatRequest(room))


def show(ctx: Context, seat: chat_verb.Seat) -> None:
    # The start allocates ~10^5 objects that all live (textual's modules and classes, the first
    # screen): the ~100 collections they would trigger find nothing to free, so the collector waits
    # for the first screen, then moves what the start built out of its way for good (gc.freeze).
    gc.disable()

    def started() -> None:
        gc.freeze()
        gc.enable()

    from attend.chat.app import ChatApp  # the one import of the TUI framework

    ChatApp(ctx, seat, started=started).run()


def run(args: list[str]) -> int | None:
    """The exit code, or None when these arguments are click's to parse."""
    mine, room = room_of(args)
    if not mine:
        return None
    try:
        ctx, seat = open_seat(room)
    except AttendError as e:
        from attend.cli import failure  # only a refusal pays for it

        failure.report(e.code, f"attend: {e}", False, sys.stdout, sys.stderr)
        return e.exit_code
    show(ctx, seat)
    return 0
