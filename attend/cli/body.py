"""The message body of ``send`` and ``reply``, one rule for both parsers (click and the fast path):
the words after the options, joined; or standard input, when the only word is ``-``, or when there
are no words and stdin is not a terminal (``git log -1 | attend send --to api``). Standard library
only: the fast path imports it."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~3 ms to import on the hot paths; mypy reads this as true
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TextIO


def message_body(words: Sequence[str], stdin: TextIO | None) -> str:
    if list(words) == ["-"] or (not words and stdin is not None and not stdin.isatty()):
        if stdin is None:
            return ""
        return stdin.read().rstrip("\n")  # a pipe's last newline is not part of the message
    return " ".join(words)
