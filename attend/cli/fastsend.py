"""`attend send` without click: the common invocations parsed by a few lines of stdlib code.

`send` is the hot outbound path (goal: a whole process within 5x a bare interpreter start), and
importing click alone costs about three interpreter starts. This parser accepts exactly the send
command's options in their plain forms, anywhere on the line as click does; anything else (help, an
unknown or malformed flag) returns None so the click frontend parses it and reports the error. A test
holds the two option sets equal, runs every argument order through both, and compares their output.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing costs ~3 ms to import on the hot paths; mypy reads this as true
if TYPE_CHECKING:
    from typing import TextIO

# option -> (request field, takes a value)
OPTIONS: dict[str, tuple[str, bool]] = {
    "--to": ("to", True),
    "--channel": ("channel", True),
    "--broadcast": ("broadcast", False),
    "--re": ("re", True),
    "--on-behalf-of": ("on_behalf_of", True),
    "--json": ("json", False),
    "--quiet": ("quiet", False),
    "-q": ("quiet", False),
}


def parse(args: list[str]) -> dict[str, object] | None:
    """Options anywhere on the line, as click parses `send`; ``--`` ends them, and everything else is a
    word of the message. None to defer to click (help, an unknown or malformed option)."""
    values: dict[str, object] = {}
    words: list[str] = []
    i, ended = 0, False
    while i < len(args):
        arg = args[i]
        if ended or arg == "-" or not arg.startswith("-"):
            words.append(arg)
        elif arg == "--":
            ended = True
        else:
            name, eq, inline = arg.partition("=")
            spec = OPTIONS.get(name)
            if spec is None:
                return None  # help, a typo, a short flag, text that looks like one: click explains
            field, takes_value = spec
            if takes_value:
                if eq:
                    values[field] = inline
                elif i + 1 < len(args):
                    i += 1
                    values[field] = args[i]
                else:
                    return None
            elif eq:
                return None
            else:
                values[field] = True
        i += 1
    values["words"] = words
    return values


def run(args: list[str], out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int | None:
    """Send, render and return the exit code; None when click should handle this command line."""
    parsed = parse(args)
    if parsed is None:
        return None
    from attend.cli import render
    from attend.cli.body import message_body
    from attend.domain.sessions.context import Context
    from attend.errors import AttendError

    as_json = bool(parsed.pop("json", False))
    quiet = bool(parsed.pop("quiet", False))
    words = parsed.pop("words")
    try:
        message = message_body(words, sys.stdin)  # type: ignore[arg-type]
        if as_json:  # the verb's result type, for its one JSON document (dataclasses: not the plain path)
            from attend.verbs import send

            result = send.run(Context.default(), send.SendRequest(message, **parsed))  # type: ignore[arg-type]
            warnings = result.warnings
        else:
            from attend.domain.messages import outbound

            outcome = outbound.send(Context.default(), message, **parsed)  # type: ignore[arg-type]
            warnings = outcome.warnings
    except AttendError as e:
        return render.refused(e, as_json, out, err)
    if as_json:
        out.write(render.document_line(result))
        return 0
    if not quiet:
        sig = outcome.sig
        line = render.sent_text(
            sig.id, outcome.scope, outcome.to_name, sig.re, outcome.recipients, outcome.humans, sig.room
        )
        out.write(line + "\n")
    for warning in warnings:
        err.write(f"attend: warning: {warning}\n")
    return 0
