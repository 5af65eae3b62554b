"""The signal envelope: a versioned header block, a blank line, then the UTF-8 body.

Header values are single-line printable ASCII set by attend; the body never reaches a header, so a
body that looks like headers stays body. ``From-Kind`` and ``From-Id`` come from the resolved
identity, never from the caller. The format is written down in docs/architecture/envelope.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

VERSION = 1

FIELDS = (
    ("Attend-Version", "version"),
    ("Message-Id", "id"),
    ("Date", "date"),
    ("From", "sender"),
    ("From-Kind", "from_kind"),
    ("From-Id", "from_id"),
    ("On-Behalf-Of", "on_behalf_of"),
    ("To", "to"),
    ("Room", "room"),
    ("Re", "re"),
    ("Origin", "origin"),
)
_OPTIONAL = {"On-Behalf-Of", "Re"}


class EnvelopeError(ValueError):
    """A file that is not a signal this reader can parse."""


class NewerVersionError(EnvelopeError):
    """A signal written by a newer attend than this reader knows."""


@dataclass(frozen=True)
class Signal:
    id: str
    sender: str  # display label at send time, e.g. "Hana-beta"
    from_kind: str  # "agent" | "human"
    from_id: str  # session id, or the human's user name
    to: str  # "*", "#name", "sid1,sid2", or a project path
    room: str
    origin: str  # the sender's project path
    body: str
    at: float  # send time, epoch seconds
    re: str | None = None
    on_behalf_of: str | None = None
    version: int = VERSION

    def with_id(self, id: str, at: float) -> Signal:
        return replace(self, id=id, at=at)


def encode_value(value: str) -> str:
    """Percent-encode what cannot stand in a one-line ASCII header (control, non-ASCII, '%'). A path
    that is not UTF-8 (``os.getcwd()`` holds its bytes as lone surrogates) keeps those bytes: lossless."""
    if value.isascii() and value.isprintable() and "%" not in value:
        return value
    out = []
    for ch in value:
        if ch.isascii() and ch.isprintable() and ch != "%":
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogateescape"))
    return "".join(out)


def decode_value(value: str, errors: str = "replace") -> str:
    """The value ``encode_value`` encoded; ``errors="surrogateescape"`` gives a path's bytes back exactly."""
    if "%" not in value:
        return value
    raw = bytearray()
    i = 0
    while i < len(value):
        if value[i] == "%" and _is_hex(value[i + 1 : i + 3]):
            raw.append(int(value[i + 1 : i + 3], 16))
            i += 3
        else:
            raw.extend(value[i].encode("utf-8"))
            i += 1
    return raw.decode("utf-8", errors)


def printable(path: str) -> str:
    """A path as text any output can carry: a byte that is not UTF-8 (a lone surrogate in memory)
    becomes the escape the console prints for it (``caf\\udce9``); valid text is unchanged."""
    return path.encode("utf-8", "backslashreplace").decode("utf-8")


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdefABCDEF" for c in s)


def format_date(at: float) -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S +0000", time.gmtime(at))


def render(sig: Signal) -> bytes:
    values = {
        "Attend-Version": str(sig.version),
        "Message-Id": sig.id,
        "Date": format_date(sig.at),
        "From": sig.sender,
        "From-Kind": sig.from_kind,
        "From-Id": sig.from_id,
        "On-Behalf-Of": sig.on_behalf_of,
        "To": sig.to,
        "Room": sig.room,
        "Re": sig.re,
        "Origin": sig.origin,
    }
    lines = [f"{key}: {encode_value(value)}" for key, _ in FIELDS if (value := values[key]) is not None]
    return ("\n".join(lines) + "\n\n").encode("ascii") + sig.body.encode("utf-8")


def parse_headers(data: bytes) -> tuple[dict[str, str], bytes]:
    head, sep, body = data.partition(b"\n\n")
    if not sep:
        raise EnvelopeError("no blank line ends the header block")
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError as e:
        raise EnvelopeError("header block is not ASCII") from e
    headers: dict[str, str] = {}
    for line in text.split("\n"):
        key, colon, value = line.partition(": ")
        if not colon:
            raise EnvelopeError(f"malformed header line {line[:40]!r}")
        headers[key] = value
    return headers, body


def parse(data: bytes, at: float | None = None) -> Signal:
    headers, body = parse_headers(data)
    try:
        version = int(headers["Attend-Version"])
    except (KeyError, ValueError) as e:
        raise EnvelopeError("missing or malformed Attend-Version") from e
    if version > VERSION:
        raise NewerVersionError(f"Attend-Version {version} is newer than this attend reads ({VERSION}); upgrade attend")
    missing = [k for k, _ in FIELDS if k not in headers and k not in _OPTIONAL and k != "Date"]
    if missing:
        raise EnvelopeError(f"missing header {missing[0]}")
    if headers["From-Kind"] not in ("agent", "human"):
        raise EnvelopeError(f"unknown From-Kind {headers['From-Kind']!r}")
    from attend.layout import name_time

    msg_id = headers["Message-Id"]
    return Signal(
        id=msg_id,
        sender=decode_value(headers["From"]),
        from_kind=headers["From-Kind"],
        from_id=decode_value(headers["From-Id"]),
        to=decode_value(headers["To"]),
        room=headers["Room"],
        origin=decode_value(headers["Origin"], "surrogateescape"),  # a path, as os.fsdecode gives it
        body=body.decode("utf-8", "replace"),
        at=at if at is not None else name_time(msg_id),
        re=headers.get("Re"),
        on_behalf_of=decode_value(headers["On-Behalf-Of"]) if "On-Behalf-Of" in headers else None,
        version=version,
    )
