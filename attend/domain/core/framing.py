"""Untrusted text made safe to stand inside attend's own framing.

A body, a session name (it comes from Claude Code's record and becomes the sender's persona), a
folder name: each is written by someone else, and each is shown to a model or an operator inside
text that attend composes (header lines, ids, closing sentences, one line per event). Invariant:
nothing inside untrusted text can pass for that framing.

- Every Unicode line break (``\\n``, ``\\r``, ``\\r\\n``, VT, FF, FS, GS, RS, NEL, U+2028, U+2029)
  is a newline; no other character ever splits a line.
- Other C0 and C1 controls, DEL, and the format characters (bidi overrides and isolates, zero-width
  spaces, tag characters) are shown visibly escaped (``\\x1b``, ``\\u202e``), so nothing reaches a
  terminal as an escape sequence or reorders what is shown. A tab stays (a space on one line),
  other Unicode spaces show as a space, and the two joiners stay (emoji and some scripts need them).
- One-line renderings (``inline``) show a newline as `` ⏎ ``; multi-line renderings (``indented``,
  ``hanging``) start every body line with an indent, so no body line can begin a header, a closing
  sentence or an id line, which all start at the margin.
- A sender or project ``label`` is shown as is when it is a plain name, and quoted otherwise, so a
  name holding brackets, parentheses, colons or quotes cannot close the header it stands in.
- A sender's ``kind`` (``agent, codex`` or ``human``) is said the same way wherever a message is shown.

Standard library only and no imports at all: the drain and the sensor loop import it.
"""

from __future__ import annotations

BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
MARK = " ⏎ "  # a newline in a one-line rendering
KEEP = frozenset("\t\u200c\u200d")  # tab, zero-width non-joiner and joiner
LABEL_MAX = 64  # characters of a label before it is cut
_PLAIN = frozenset(" .-_'@+#&…")  # besides letters and digits, what a plain name may hold (… ends a cut one)


def _escape(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n <= 0xFF else f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"


def _char(c: str) -> str:
    n = ord(c)
    if n < 0x20 or 0x7F <= n < 0xA0 or not c.isspace():
        return _escape(c)  # a control, or a format character (bidi, zero-width, tag), or unassigned
    return " "  # a Unicode space other than U+0020 (no-break, ideographic, …)


def lines(text: str) -> list[str]:
    """The text split at every line break, with each remaining unsafe character escaped."""
    if text.isprintable():
        return [text]  # the honest common case: one line, nothing to escape
    out: list[str] = []
    current: list[str] = []
    for c in text.replace("\r\n", "\n"):
        if c in BREAKS:
            out.append("".join(current))
            current = []
        elif c.isprintable() or c in KEEP:
            current.append(c)
        else:
            current.append(_char(c))
    out.append("".join(current))
    return out


def trimmed(text: str) -> list[str]:
    """The lines without the blank ones that lead or trail (a body's final newline, say)."""
    rows = lines(text)
    while len(rows) > 1 and not rows[-1].strip():
        rows.pop()
    while len(rows) > 1 and not rows[0].strip():
        rows.pop(0)
    return rows


def inline(text: str) -> str:
    """One line: blank lines dropped, each newline shown as `` ⏎ ``, tabs as spaces."""
    return MARK.join(row.strip().replace("\t", " ") for row in lines(text) if row.strip())


def label(text: str) -> str:
    """A name as it may stand in a header: as is when plain, else double-quoted with ``"`` and ``\\``
    escaped; cut at 64 characters either way."""
    name = inline(text)
    if len(name) > LABEL_MAX:
        name = name[: LABEL_MAX - 1] + "…"
    if name and all(c.isalnum() or c in _PLAIN for c in name) and name == name.strip():
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def kind(from_kind: str, client: str | None) -> str:
    """What wrote a message, as every rendering says it: ``agent, codex`` (the agent's client when the
    record names one), ``agent``, or ``human``; each part a label, so a record cannot stretch it."""
    return label(from_kind) + (", " + label(client) if client else "")


def indented(text: str, indent: str = "  ") -> list[str]:
    """The body as lines, each starting with ``indent`` (a blank body line is the indent alone, so a
    blank line in the output is always attend's own separator)."""
    return [indent + row for row in trimmed(text)]


def hanging(head: str, text: str) -> list[str]:
    """``head`` and the body's first line, then its other lines aligned under the first."""
    first, *rest = trimmed(text)
    pad = " " * len(head)
    return [head + first] + [pad + row for row in rest]
