"""Monitor lines: what the sensor loop prints, one stdout line per event, as the original did.

``[attend sensor=peers priority=<p>] message from <Persona[-ordinal]> (<project>): <body>``

Every line is one line, because Claude Code turns each stdout line into its own event: a body's
line breaks show as `` ⏎ `` and its control and bidi characters escaped, and the sender and project
are labels, quoted unless plain (``attend.domain.core.framing``), so nothing in them can forge a line.
Long bodies split at word boundaries into at most three chunks; more than eight pending messages
collapse into one digest line.
"""

from __future__ import annotations

import os

from attend.domain.core import framing, rooms
from attend.domain.core.envelope import Signal

CHUNK = 260  # characters of body per line, as the original
MAX_CHUNKS = 3
DIGEST_OVER = 8  # more pending than this at once: one digest line instead
OVERFLOW = " …see attend inbox for full message"
MCP_REPLY = "mcp__attend__reply"
MCP_SEND = "mcp__attend__send"


def prefix(priority: str, sensor: str = "peers") -> str:
    return f"[attend sensor={sensor} priority={priority}]"


def sensor_line(sensor: str, priority: str, text: str) -> str:
    """A sensor's observation as one Monitor line: whatever the text holds (a script's output is
    untrusted), it stays one line after attend's own prefix, so it cannot pass for another line."""
    return f"{prefix(priority, sensor)} {one_line(text)}"


def one_line(text: str) -> str:
    """One line (breaks shown as `` ⏎ ``, controls escaped), runs of spaces folded into one."""
    return " ".join(framing.inline(text).split())


def project_name(origin: str) -> str:
    return os.path.basename(origin.rstrip("/")) or origin or "?"


def label(sig: Signal) -> str:
    return sender_label(sig.sender, sig.origin)


def sender_label(display: str, origin: str) -> str:
    """``<sender> (<project>)``, each a label: a name cannot close the parentheses it stands in."""
    return f"{framing.label(display)} ({framing.label(project_name(origin))})"


def chunks(body: str) -> list[str]:
    """Split at word boundaries into at most 3 chunks of 260; the overflow ends with a pointer to
    the inbox. A single word longer than a chunk is not split (it is one token to the reader)."""
    words = body.split(" ")
    out: list[str] = []
    current = ""
    for word in words:
        candidate = f"{current} {word}" if current else word
        if len(candidate) <= CHUNK or not current:
            current = candidate
        else:
            out.append(current)
            current = word
    out.append(current)
    if len(out) <= MAX_CHUNKS:
        return out
    kept = out[:MAX_CHUNKS]
    room = CHUNK - len(OVERFLOW)
    last = kept[-1]
    if len(last) > room:
        cut = last.rfind(" ", 0, room + 1)
        last = last[: cut if cut > 0 else room]
    kept[-1] = last + OVERFLOW
    return kept


def reply_hint(mcp: bool) -> str:
    return f" (reply: the {MCP_REPLY} tool)" if mcp else ' (reply: attend reply "…")'


def message_lines(sig: Signal, hint: str = "") -> list[str]:
    """The Monitor line(s) for one message; ``hint`` is appended to the first chunk."""
    head = prefix(rooms.priority(sig.room))
    parts = chunks(one_line(sig.body))
    who = label(sig)
    if len(parts) == 1:
        return [f"{head} message from {who}: {parts[0]}{hint}"]
    n = len(parts)
    return [f"{head} message from {who} ({i}/{n}): {p}{hint if i == 1 else ''}" for i, p in enumerate(parts, 1)]


def digest_line(signals: list[Signal], party: set[str] | frozenset[str] = frozenset()) -> str:
    """One line for a burst: how many, split by where they were addressed, what the session takes
    part in (``party``: ids addressed to it or answering it) first."""
    mine = sum(1 for s in signals if s.id in party or s.room.startswith(("d-", "p-")))
    rest = [s for s in signals if not (s.id in party or s.room.startswith(("d-", "p-")))]
    open_ = sum(1 for s in rest if s.room == rooms.OPEN)
    channel = sum(1 for s in rest if s.room.startswith("@"))
    parts = [f"{n} {what}" for n, what in ((mine, "for you"), (open_, "on #open"), (channel, "in channels")) if n]
    other = len(rest) - open_ - channel
    if other:
        parts.append(f"{other} elsewhere")
    priority = "high" if mine else "medium" if channel else "low"
    return f"{prefix(priority)} {len(signals)} new messages: {', '.join(parts)} — attend inbox for detail"


def fold_line(signals: list[Signal]) -> str:
    """One line for a sender the governor folds: who, how many, the ids they run between."""
    first, last = signals[0], signals[-1]
    head = prefix(rooms.priority(first.room))
    who = framing.label(first.sender)
    return (
        f"{head} {len(signals)} messages from {label(first)} folded (sending fast), ids {first.id} … {last.id}"
        f" — attend inbox --from {who}"
    )


def note_line(note: str) -> str:
    return f"{prefix('medium')} {note}"


def presence_line(event: str, display: str, origin: str, same_project: bool) -> str:
    priority = "medium" if same_project else "low"
    where = "same project" if same_project else "other project"
    return f"{prefix(priority)} peer session {event}: {sender_label(display, origin)} [{where}]"


def banner(display: str, project: str, room_labels: list[str], mcp: bool) -> str:
    send = f"the {MCP_SEND} tool" if mcp else 'attend send "…"'
    rooms_ = ", ".join(room_labels)
    return f"[attend] watching {framing.label(display)} ({framing.label(project)}) — rooms: {rooms_} | send: {send}"


RESTARTED = "[attend] restarted (unchanged)"
