"""The message body of ``send`` and ``reply``, one rule for both parsers (click and the fast path):
the words after the options, joined; or standard input, when the only word is ``-``, or when there
are no words and stdin is not a terminal (``git log -1 | attend send --to api``). Standard input is
read only up to the message limit and a few bytes more: a larger body is refused having cost no more
than that, however much is piped in. Standard library only: the fast path imports it."""

from __future__ import annotations

from attend.domain.sessions.context import MESSAGE_LIMIT
from attend.errors import UsageError

TYPE_CHECKING = False  # typing costs ~3 ms to import on the hot paths; mypy reads this as true
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TextIO


def message_body(words: Sequence[str], stdin: TextIO | None) -> str:
    if list(words) == ["-"] or (not words and stdin is not None and not stdin.isatty()):
        if stdin is None:
            return ""
        return read_bounded(stdin)
    return " ".join(words)


SLACK = 64  # bytes read past the limit: a body at the limit may end in a pipe's newline or a few


def read_bounded(stdin: TextIO) -> str:
    """Standard input, at most ``MESSAGE_LIMIT`` bytes once its last newlines are dropped (a pipe's last
    newline is not part of the message); more is refused (one line, exit 2) having read no more than
    ``SLACK`` bytes past the limit. Bytes that are not UTF-8 come through as surrogates, which the
    message's own check refuses in its words."""
    cap = MESSAGE_LIMIT + SLACK
    raw = getattr(stdin, "buffer", None)
    if raw is not None:
        data = _read_upto(raw, cap).rstrip(b"\n")
        full, size = len(data) >= cap, len(data)
        text = data.decode("utf-8", "surrogateescape")
    else:  # a text stream with no bytes beneath (a test's StringIO): characters, then their bytes
        text = stdin.read(cap)
        full = len(text) >= cap
        text = text.rstrip("\n")
        size = len(text.encode("utf-8", "surrogatepass"))
    if full or size > MESSAGE_LIMIT:
        limit = f"{MESSAGE_LIMIT // 1024} KiB"
        raise UsageError(f"the message on standard input is over the {limit} limit; shorten it or point at a file")
    return text


def _read_upto(raw: object, limit: int) -> bytes:
    """Up to ``limit`` bytes from a binary stream, however its reads come (a pipe gives what is there)."""
    parts: list[bytes] = []
    got = 0
    read = raw.read1 if hasattr(raw, "read1") else raw.read  # type: ignore[attr-defined]
    while got < limit:
        chunk = read(min(65536, limit - got))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)
