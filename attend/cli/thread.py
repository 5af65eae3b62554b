"""CLI handler for `attend thread`: a message's thread from its root, indented as `attend chat` draws it."""

from __future__ import annotations

import click

from attend.cli.app import epilog
from attend.cli.common import context, emit, json_option
from attend.verbs import thread as thread_verb

INDENT = "  "


def _thread_text(t: thread_verb.Thread) -> str:
    from attend.cli import render
    from attend.domain.core import framing
    from attend.seat.threads import thread_order  # the order chat draws a thread in (no TUI imported)

    lines = []
    for row in thread_order(t.messages, set()):
        m, pad = row.msg, INDENT * row.depth
        mark = "  ←" if m.id == t.asked and m.id != t.root else ""
        head = f"{pad}{render.clock(m.at)} {framing.inline(m.sender)} ({m.from_kind}) {t.short.get(m.id, m.id)}{mark}"
        lines.append(head)
        lines += [f"{pad}{INDENT}{line}" for line in framing.trimmed(m.body)]
    replies = len(t.messages) - 1
    lines.append(f"\n{replies} repl{'y' if replies == 1 else 'ies'} under {t.short.get(t.root, t.root)}")
    return "\n".join(lines)


@click.command(help=thread_verb.DESCRIPTION, epilog=epilog(thread_verb.EXAMPLES))
@click.argument("msg_id", metavar="ID")
@json_option
def thread(msg_id: str, as_json: bool) -> None:
    emit(thread_verb.run(context(), thread_verb.ThreadRequest(msg_id)), as_json, _thread_text)
