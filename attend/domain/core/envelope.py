"""The signal envelope: a versioned header block, a blank line, then the UTF-8 body.

Version 2 leads with the standard mail headers (Message-ID, Date, From, To, Subject, In-Reply-To,
References, MIME), as the stdlib ``email`` package folds and encodes them, so a mail reader shows and
threads the spool; the attend fields follow as before. Every value is single-line printable ASCII
before it is written (line breaks and control characters cannot reach a header), and the body never
reaches a header, so a body that looks like headers stays body. ``From-Kind`` and ``From-Id`` come
from the resolved identity, never from the caller. Version 1 records are still read. The format is
written down in docs/architecture/envelope.md.
"""

from __future__ import annotations

import time

from attend.layout import ALNUM, NAME_RE, LazyPattern, made_safe, name_time
from attend.record import Record

VERSION = 2
DOMAIN = "attend.invalid"  # RFC 2606: never resolves, so no address here can reach real mail
SUBJECT_MAX = 60  # characters of the body's first line shown as the subject

# The attend fields, in the order written; the standard headers before them are derived.
FIELDS = (
    ("Attend-Version", "version"),
    ("From-Kind", "from_kind"),
    ("From-Id", "from_id"),
    ("Client", "client"),
    ("On-Behalf-Of", "on_behalf_of"),
    ("Attend-To", "to"),
    ("Room", "room"),
    ("Re", "re"),
    ("Origin", "origin"),
    ("Relayed-From", "via"),
    ("Relayed-Id", "relayed"),
)
_OPTIONAL = {"Client", "On-Behalf-Of", "Re", "Relayed-From", "Relayed-Id"}
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_CLIENT_CHARS = _LOWER + "0123456789-"


def is_client_name(text: str) -> bool:
    """The agent client a session runs in (claude, codex, gemini): a token, never free text,
    ``[a-z][a-z0-9-]{0,31}``. Checked by character: a session's every send writes it, and a pattern
    would bring ``re`` into the send (~3 ms)."""
    return 0 < len(text) <= 32 and text[0] in _LOWER and all(c in _CLIENT_CHARS for c in text)


MAIL_HEADERS = ("Message-ID", "Date", "From", "To", "Subject")  # always written; threads add two
V1_FIELDS = ("Message-Id", "From", "To")  # what version 1 kept in the headers version 2 made standard

_MIME = "MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n"
_LOCAL_CHARS = ALNUM + "_.-"
_PHRASE_CHARS = ALNUM + "_#+-"  # a display name written unquoted: words of these, one space apart
_PLAIN_ADDRESS = LazyPattern(r"([A-Za-z0-9 #_.,:/+-]*) <[^<>]*>")  # a display name that needs no decoding
# Another host's sender as a relay writes it (``Hana-beta@laptop``): the email package quotes it for its '@'.
_RELAYED_PHRASE = LazyPattern(r"[A-Za-z0-9_#+-]+(?: [A-Za-z0-9_#+-]+)*@[A-Za-z0-9-]+")
_RELAYED_ADDRESS = LazyPattern(r'"([A-Za-z0-9_#+-]+(?: [A-Za-z0-9_#+-]+)*@[A-Za-z0-9-]+)" <[^<>]*>')


class EnvelopeError(ValueError):
    """A file that is not a signal this reader can parse."""


class NewerVersionError(EnvelopeError):
    """A signal written by a newer attend than this reader knows."""


class Signal(Record):
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
    ancestors: tuple[str, ...] = ()  # ids above ``re`` in its thread, oldest first (References)
    via: str | None = None  # the host a relayed record came from (its From-Id then carries ``@<host>``)
    relayed: str | None = None  # a relayed record's id on the host that sent it
    client: str | None = None  # the sender's agent client (claude, codex, gemini); None for a human

    def with_id(self, id: str, at: float) -> Signal:
        return self._replace(id=id, at=at)


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


# ---------------------------------------------------------------------- the standard headers


def one_line(text: str) -> str:
    """Text safe in a header: every line break, tab or control character becomes a space, runs of
    spaces collapse. The email package would otherwise write a newline in a value as it stands."""
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else " " for ch in text)
    return " ".join(text.split())


def inert(text: str) -> str:
    """A name or subject the email package will not decode: ``=?`` (the start of an RFC 2047
    encoded word) becomes ``= ?``. The package decodes such a word in any text it is handed, quoted
    or not, and writes what it decoded as it stands, a line break included (Python 3.11 to 3.13):
    ``=?utf-8?q?=0ARe:_<id>?=`` in a subject would start a header line of its own."""
    return one_line(text).replace("=?", "= ?")


def subject(body: str) -> str:
    """The body's first non-blank line, on one line, shortened to SUBJECT_MAX characters."""
    first = next((line for line in body.splitlines() if line.strip()), "")
    text = inert(first)
    return text if len(text) <= SUBJECT_MAX else text[: SUBJECT_MAX - 3].rstrip() + "..."  # ASCII: see plain_headers


def message_id(name: str) -> str:
    return f"<{name}@{DOMAIN}>"


def name_of(msg_id: str) -> str | None:
    """The unique name inside ``<name@attend.invalid>``; None for any other id."""
    inner = msg_id.strip()
    if inner.startswith("<") and inner.endswith(">"):
        inner = inner[1:-1]
    name, at, domain = inner.rpartition("@")
    return name if at and domain == DOMAIN and NAME_RE.fullmatch(name) else None


def local_part(text: str) -> str:
    """A dot-atom local part for an id (a human's ``user@terminal`` keeps its user name)."""
    return made_safe(text.split("@", 1)[0], _LOCAL_CHARS, runs=True).strip(".") or "unknown"


def _plain_phrase(name: str) -> bool:
    """``[A-Za-z0-9_#+-]+(?: [A-Za-z0-9_#+-]+)*``, checked without ``re`` (a plain send imports none)."""
    return all(word and all(c in _PHRASE_CHARS for c in word) for word in name.split(" "))


def references(sig: Signal) -> list[str]:
    """The thread above this signal, oldest first, ending with its parent; the first and the newest
    nine when longer, so a long thread keeps its root and readers the recent ids they thread on."""
    if not sig.re:
        return []
    refs = [*sig.ancestors, sig.re]
    return refs if len(refs) <= 10 else refs[:1] + refs[-9:]


def _addresses(sig: Signal) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(From, To) as (display name, local part, domain) triples."""
    sender = [(inert(sig.sender), local_part(sig.from_id), DOMAIN)]
    to = sig.to
    if to == "*":
        return sender, [("#open", "open", "room." + DOMAIN)]
    if to.startswith("#"):
        return sender, [(inert(to), local_part(to[1:]), "channel." + DOMAIN)]
    if to.startswith("/"):
        return sender, [(inert(to), local_part(sig.room), "room." + DOMAIN)]
    return sender, [("", local_part(part), DOMAIN) for part in to.split(",") if part]


def mail_headers(sig: Signal) -> str:
    """The standard header block: as the email package folds it (RFC 2047 words for non-ASCII)."""
    return plain_headers(sig) or email_headers(sig)


def email_headers(sig: Signal) -> str:
    """The standard header block written by email.headerregistry under email.policy.default."""
    import datetime
    from email.headerregistry import Address
    from email.policy import default as policy

    sender, to = _addresses(sig)
    values: list[tuple[str, object]] = [
        ("Message-ID", message_id(sig.id)),
        ("Date", datetime.datetime.fromtimestamp(sig.at, datetime.UTC)),
        ("From", [Address(*a) for a in sender]),
        ("To", [Address(*a) for a in to] or [Address("", "undisclosed", DOMAIN)]),
        ("Subject", subject(sig.body)),
    ]
    refs = references(sig)
    if refs:
        values.append(("In-Reply-To", message_id(refs[-1])))
        values.append(("References", " ".join(message_id(r) for r in refs)))
    return "".join(policy.header_factory(key, value).fold(policy=policy) for key, value in values)


def plain_headers(sig: Signal) -> str | None:
    """The same block for the common case, without importing the email package (~13 ms, a tenth of
    a cold `attend send`): ASCII words needing no quoting or encoding, every line within 78 columns.
    None otherwise; tests/test_envelope.py checks the two agree wherever this answers."""
    sender, to = _addresses(sig)
    addresses = []
    for name, local, domain in [*sender, *to]:
        if name and not _plain_phrase(name) and _RELAYED_PHRASE.fullmatch(name):
            name = f'"{name}"'  # a relayed sender, quoted as the package quotes it
        elif not (_plain_phrase(name) or not name):
            return None
        if ".." in local or not local:
            return None
        addresses.append(f"{name} <{local}@{domain}>" if name else f"{local}@{domain}")
    text = subject(sig.body)
    if not text or not text.isascii():
        return None
    refs = [message_id(r) for r in references(sig)]
    lines = [
        f"Message-ID: {message_id(sig.id)}",
        f"Date: {format_date(sig.at)}",
        f"From: {addresses[0]}",
        f"To: {', '.join(addresses[1:])}",
        f"Subject: {text}",
    ]
    if refs:
        # Two ids never share a line (each is over 38 columns), so the package puts one per line.
        lines += [f"In-Reply-To: {refs[-1]}", f"References: {refs[0]}", *(f" {r}" for r in refs[1:])]
    if len(addresses) < 2 or any(len(line) > 78 for line in lines):
        return None
    return "\n".join(lines) + "\n"


def sender_label(headers: dict[str, str]) -> str:
    """The sender's display label from a parsed header block, whichever version wrote it."""
    value = headers.get("From", "?")
    if headers.get("Attend-Version") == "1":
        return one_line(decode_value(value))
    if m := _PLAIN_ADDRESS.fullmatch(value) or _RELAYED_ADDRESS.fullmatch(value):
        return m.group(1)
    if "<" not in value:
        return ""
    from email.policy import default as policy

    try:
        found = policy.header_factory("From", value).addresses
    except Exception:  # a foreign header the registry cannot parse: show it as written
        return value
    # A planted record's encoded word may decode to a line break: a label is one line.
    return one_line(str(found[0].display_name)) if found else ""


# ---------------------------------------------------------------------- write and read


def render(sig: Signal) -> bytes:
    values = {
        "Attend-Version": str(VERSION),  # the layout written is this version's, whatever was read
        "From-Kind": sig.from_kind,
        "From-Id": sig.from_id,
        "Client": sig.client if sig.client and is_client_name(sig.client) else None,
        "On-Behalf-Of": sig.on_behalf_of,
        "Attend-To": sig.to,
        "Room": sig.room,
        "Re": sig.re,
        "Origin": sig.origin,
        "Relayed-From": sig.via,
        "Relayed-Id": sig.relayed,
    }
    lines = [f"{key}: {encode_value(value)}\n" for key, _ in FIELDS if (value := values[key]) is not None]
    head = lines[0] + mail_headers(sig) + "".join(lines[1:]) + _MIME
    return (head + "\n").encode("ascii") + sig.body.encode("utf-8")


def parse_headers(data: bytes) -> tuple[dict[str, str], bytes]:
    """The header block as written (folded lines joined) and the body bytes."""
    head, sep, body = data.partition(b"\n\n")
    if not sep:
        raise EnvelopeError("no blank line ends the header block")
    try:
        text = head.decode("ascii")
    except UnicodeDecodeError as e:
        raise EnvelopeError("header block is not ASCII") from e
    headers: dict[str, str] = {}
    seen: set[str] = set()
    key = ""
    for line in text.split("\n"):
        if line[:1] in (" ", "\t") and key:
            headers[key] += line  # a folded continuation (RFC 5322 unfolding: drop the line break)
            continue
        key, colon, value = line.partition(":")
        if not colon or not key or " " in key:
            raise EnvelopeError(f"malformed header line {line[:40]!r}")
        low = key.lower()
        if low in seen:
            # attend writes each header once: a second Re, Message-ID or On-Behalf-Of was forged
            # (the forgery may come first, so neither copy can be trusted).
            raise EnvelopeError(f"repeated header {key[:40]!r}")
        seen.add(low)
        headers[key] = value[1:] if value.startswith(" ") else value  # one space after the colon, as written
    return headers, body


def parse(data: bytes, at: float | None = None) -> Signal:
    headers, body = parse_headers(data)
    try:
        version = int(headers["Attend-Version"])
    except (KeyError, ValueError) as e:
        raise EnvelopeError("missing or malformed Attend-Version") from e
    if version > VERSION:
        raise NewerVersionError(f"Attend-Version {version} is newer than this attend reads ({VERSION}); upgrade attend")
    if version == 1:
        required = [k for k, _ in FIELDS if k not in _OPTIONAL and k != "Attend-To"] + list(V1_FIELDS)
    else:
        required = [k for k, _ in FIELDS if k not in _OPTIONAL] + ["Message-ID", "From"]
    missing = [k for k in required if k not in headers]
    if missing:
        raise EnvelopeError(f"missing header {missing[0]}")
    if headers["From-Kind"] not in ("agent", "human"):
        raise EnvelopeError(f"unknown From-Kind {headers['From-Kind']!r}")
    client = headers.get("Client")
    if client is not None and not is_client_name(client):
        raise EnvelopeError(f"Client {client[:40]!r} is not a client name")
    ancestors: tuple[str, ...] = ()
    if version == 1:
        msg_id, to = headers["Message-Id"], headers["To"]
    else:
        found = name_of(headers["Message-ID"])
        if found is None:
            raise EnvelopeError(f"Message-ID {headers['Message-ID'][:60]!r} is not an attend id")
        msg_id, to = found, headers["Attend-To"]
        refs = [n for r in headers.get("References", "").split() if (n := name_of(r))]
        ancestors = tuple(refs[:-1]) if refs and refs[-1] == headers.get("Re") else tuple(refs)
    return Signal(
        id=msg_id,
        sender=sender_label(headers),
        from_kind=headers["From-Kind"],
        from_id=decode_value(headers["From-Id"]),
        to=decode_value(to),
        room=headers["Room"],
        origin=decode_value(headers["Origin"], "surrogateescape"),  # a path, as os.fsdecode gives it
        body=body.decode("utf-8", "replace"),
        at=at if at is not None else name_time(msg_id),
        re=headers.get("Re"),
        on_behalf_of=decode_value(headers["On-Behalf-Of"]) if "On-Behalf-Of" in headers else None,
        version=version,
        ancestors=ancestors,
        via=headers.get("Relayed-From"),
        relayed=headers.get("Relayed-Id"),
        client=client,
    )
