"""What the chat screen computes without drawing: a room's messages in thread order (each reply
under what it answers, folded threads hidden), and the address a typed line carries
(``@name``/``#channel`` words at its start). No TUI framework here."""

from __future__ import annotations

import re
from dataclasses import dataclass

from attend.errors import UsageError
from attend.verbs.inbox import Message

MAX_DEPTH = 4  # deeper replies are drawn at this indent (an 80-column screen has no room for more)
_ADDRESS = re.compile(r"[@#][^\s@#,:;]+")


@dataclass(frozen=True)
class Row:
    msg: Message
    depth: int
    replies: int  # replies under it in this room (all depths)
    folded: bool  # its replies are hidden


def thread_order(msgs: list[Message], folded: set[str]) -> list[Row]:
    """Roots in send order, each followed depth-first by its replies in send order. A reply whose
    parent is not in the list is a root here (its parent is elsewhere, or older than the history)."""
    by_id = {m.id: m for m in msgs}
    children: dict[str, list[Message]] = {}
    roots: list[Message] = []
    for m in sorted(msgs, key=lambda m: m.id):
        if m.re is not None and m.re in by_id and m.re != m.id:
            children.setdefault(m.re, []).append(m)
        else:
            roots.append(m)

    def count(mid: str) -> int:
        return sum(1 + count(c.id) for c in children.get(mid, []))

    rows: list[Row] = []

    def walk(m: Message, depth: int) -> None:
        hidden = m.id in folded and m.id in children
        rows.append(Row(m, depth, count(m.id), hidden))
        if not hidden:
            for c in children.get(m.id, []):
                walk(c, min(depth + 1, MAX_DEPTH))

    for r in roots:
        walk(r, 0)
    return rows


def root_of(msgs: list[Message], msg_id: str) -> str:
    """The id of the thread root ``msg_id`` belongs to, within ``msgs``."""
    by_id = {m.id: m for m in msgs}
    seen: set[str] = set()
    current = msg_id
    while current in by_id and by_id[current].re in by_id and current not in seen:
        seen.add(current)
        current = by_id[current].re  # type: ignore[assignment]
    return current


@dataclass(frozen=True)
class Line:
    names: list[str]  # @name words: sessions or humans
    channel: str | None  # a #channel word
    body: str


def address(text: str) -> Line:
    """Split the ``@name`` and ``#channel`` words that open a line from its body. One channel, or
    names, not both: the line goes to one place. A line whose first word (after any spaces) starts
    with @ or # is addressed: every such word up to the body must be a whole address (``@a @b``,
    ``@a,@b``, ``@a:``), or the line is refused, never sent to the room on screen instead."""
    names: list[str] = []
    channel: str | None = None
    rest = text.lstrip()
    while rest[:1] in ("@", "#"):
        token = rest.split(None, 1)[0]
        for part in token.split(","):
            word = part.rstrip(":;")
            if not word and part != token:
                continue  # "@a, @b": the comma's empty side
            if not _ADDRESS.fullmatch(word):
                raise UsageError(
                    f"{token!r} is not an address: write @name or #channel, a space after each (@a @b hello)"
                )
            if word.startswith("@"):
                names.append(word[1:])
            else:
                if channel is not None:
                    raise UsageError(f"one #channel per line ({channel} and {word}); send twice")
                channel = word
        rest = rest[len(token) :].lstrip(" \t")
        if rest.startswith("\n"):
            rest = rest[1:]
    if names and channel is not None:
        raise UsageError("a line goes to @names or to a #channel, not both")
    return Line(names, channel, rest)


def completions(word: str, peers: list[str], channels: list[str]) -> list[str]:
    """Candidates for a ``@na``/``#ch`` word: live peers and humans, or channels (and #open)."""
    if word.startswith("@"):
        pool = ["@" + p for p in peers]
    elif word.startswith("#"):
        pool = ["#open", *("#" + c for c in channels)]
    else:
        return []
    low = word.lower()
    return sorted({c for c in pool if c.lower().startswith(low)})


def common_prefix(words: list[str]) -> str:
    if not words:
        return ""
    first, last = min(words), max(words)
    n = 0
    while n < len(first) and n < len(last) and first[n].lower() == last[n].lower():
        n += 1
    return first[:n]
