"""The client's side of the socket conduit: what ``attend.conduits.inbox_socket`` needs from outside
the spool. It posts to Claude Code's inbox socket, reads the session's ``crossSessionInbound`` setting,
and reads the session's transcript to confirm that a post was put before the model (by the client's
record of that post, never by a mention of its messages). It never imports
the gate (tests/test_layers.py): the spool is the other module's.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable

from attend import safejson

SEND_TIMEOUT = 5.0  # seconds for connect and write: the client reads at once


class NoDoor(OSError):
    """The path names no socket of this user's client (none there, none listening, or not a socket of
    this user): a later post would fail the same way, and the token must go to nobody else."""


def post(path: str, token: str, content: str) -> None:
    """One post: connect, the auth line, one user line. NoDoor when nothing of this user's listens
    there; another OSError when the post broke on the way (worth a retry)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError as e:
        raise NoDoor(f"{path} is gone ({e.strerror})") from None
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid():
        raise NoDoor(f"{path} is not a socket of this user")
    import socket  # here: status and doctor import this module, and only a post needs it

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(SEND_TIMEOUT)
        try:
            s.connect(path)
        except (ConnectionRefusedError, FileNotFoundError) as e:
            raise NoDoor(f"{path} refused the connection ({e.strerror})") from None
        auth = json.dumps({"type": "auth", "token": token})
        line = json.dumps({"type": "user", "message": {"role": "user", "content": content}}, ensure_ascii=False)
        s.sendall(f"{auth}\n{line}\n".encode())
        s.shutdown(socket.SHUT_WR)
        with contextlib.suppress(OSError):  # the client answers nothing; wait for its close, briefly
            s.settimeout(0.2)
            while s.recv(4096):
                pass
    finally:
        s.close()


CHUNK = 1 << 20  # bytes of transcript read at a time
LINE_MAX = 64 << 20  # a longer transcript line is passed over (a post's record is far shorter)


class Scan:
    """A transcript read forward from a post's offset, a chunk at a time, remembering where it stopped:
    each look reads only what the client wrote since the last, however much that is (no window a large
    turn could exceed). Non-blocking and regular files only: a FIFO planted at the path never hangs it."""

    def __init__(self, path: str | None, offset: int) -> None:
        self.path = path
        self.pos = max(0, offset)
        self.partial: list[bytes] = []  # the line being read, not yet ended
        self.partial_size = 0
        self.skipping = False  # the line being read is over LINE_MAX: pass it over to its end
        self.seen: list[bytes] = []  # the complete lines the last find() read

    def lines(self) -> list[bytes]:
        """The complete lines written since the last look."""
        if not self.path:
            return []
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return []
        out: list[bytes] = []
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return []
            while data := os.pread(fd, CHUNK, self.pos):
                self.pos += len(data)
                *ended, rest = data.split(b"\n")
                if ended:
                    first = b"".join([*self.partial, ended[0]])
                    if not self.skipping:
                        out.append(first)
                    out.extend(ended[1:])
                    self.partial, self.partial_size, self.skipping = [], 0, False
                self.partial.append(rest)
                self.partial_size += len(rest)
                if self.partial_size > LINE_MAX:
                    self.partial, self.partial_size, self.skipping = [], 0, True
        except OSError:
            pass
        finally:
            os.close(fd)
        return out

    def find(self, needle: bytes, match: Callable[[str], bool]) -> bool:
        """Whether a line written since the last look holds ``needle`` and records, as put before the
        model, a text for which ``match`` holds."""
        lines = self.seen = self.lines()
        if self.partial and not self.skipping:  # a last line not yet ended (kept for the next look too)
            lines.append(b"".join(self.partial))
        for line in lines:
            if needle not in line:
                continue
            try:
                entry = safejson.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and any(match(text) for text in posted_texts(entry)):
                return True
        return False


def confirmed_in(scan: Scan, mark: str) -> bool:
    """Whether the transcript, past where ``scan`` has read, holds the client's record of a post carrying
    ``mark`` (a token only that post holds) as put before the model. Only the text the post became
    counts: a tool result or a prompt that names the post's message ids is no record of the post."""
    return bool(mark) and scan.find(mark.encode(), lambda text: mark in text)


def posted_texts(entry: dict[str, object]) -> list[str]:
    """The texts a transcript entry records as given to the model from outside a tool call (measured
    on 2.1.332, docs/architecture/conduits.md): a busy session's ``attachment`` (``queued_command``,
    its ``prompt`` the post), an idle one's ``user`` turn (the client's sentence around the post), and
    the ``api-request-blob`` of a request. Tool results and the model's own words are none of these."""
    kind = entry.get("type")
    if kind == "attachment":
        attachment = entry.get("attachment")
        if isinstance(attachment, dict) and attachment.get("type") == "queued_command":
            prompt = attachment.get("prompt")
            return [prompt] if isinstance(prompt, str) else []
        return []
    if kind not in ("user", "api-request-blob") or "toolUseResult" in entry:
        return []
    message = entry.get("message")
    if not isinstance(message, dict) or message.get("role") not in ("user", "system"):
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    # Text blocks only: a tool's output sits in a tool_result block, whatever it prints.
    blocks = content if isinstance(content, list) else []
    return [
        b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def size(path: str | None) -> int:
    try:
        return os.stat(path).st_size if path else 0
    except OSError:
        return 0


def is_file(path: str | None) -> bool:
    """A regular file (a FIFO planted at the path is none: nothing is waited for there)."""
    try:
        return bool(path) and stat.S_ISREG(os.stat(str(path)).st_mode)
    except OSError:
        return False


def is_dir(path: str | None) -> bool:
    return bool(path) and os.path.isdir(str(path))


MARK_OPEN = "(post "  # how a post's mark stands in its text: "(post <mark>)"


def digest(mark: str) -> str:
    """What ``sessions/<sid>/posted`` keeps of a post's mark: its SHA-256. Any process of the user reads
    the file, and one that learned the mark could put it before the model in a post of its own, making
    a dropped post count as shown; from the digest it cannot (the mark is 128 random bits)."""
    import hashlib

    return hashlib.sha256(mark.encode()).hexdigest()


def marks_in(text: str) -> list[str]:
    """The post marks a text carries."""
    out = []
    start = 0
    while (at := text.find(MARK_OPEN, start)) >= 0:
        start = at + len(MARK_OPEN)
        end = text.find(")", start, start + 80)
        if end > 0:
            out.append(text[start:end])
    return out


def posted_record(transcript: str | None, offset: int, mark: str, newest: str) -> bytes:
    """``sessions/<sid>/posted`` while a post awaits the transcript's word: a bare ``reply`` made in the
    turn the post began threads under ``newest`` although the conduit has not yet seen the word. It
    keeps the mark's digest, never the mark."""
    return json.dumps({"transcript": transcript, "offset": offset, "digest": digest(mark), "newest": newest}).encode()


SETTLE = 1.5  # seconds a bare reply looks again for a post the client has not yet written down
SETTLE_LOOK = 0.02  # seconds between those looks


def asks_for_tool(entry: dict[str, object]) -> bool:
    """Whether a transcript entry is the model asking for a tool (a call then runs, until a user entry
    brings its result)."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    blocks = content if isinstance(content, list) else []
    return entry.get("type") == "assistant" and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)


def shown_post(record: str | None, settle: float = 0.0) -> str | None:
    """The newest id of a pending post the transcript already shows as put before the model, or None.

    The client writes its transcript in batches, about 0.1 s apart, so a model that answers at once
    can be running a tool before the file holds the post it was shown. With ``settle``, look again
    until the file holds a call still running (the one asking, which the client writes after
    whatever the model was shown before it), for at most ``settle`` seconds."""
    try:
        data = safejson.loads(record) if record else None
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    transcript, offset, want, newest = (data.get(k) for k in ("transcript", "offset", "digest", "newest"))
    if not (isinstance(transcript, str) and isinstance(offset, int) and isinstance(newest, str)):
        return None
    if not isinstance(want, str) or len(want) != 64 or isinstance(offset, bool) or not 0 <= offset < 1 << 62:
        return None

    def match(text: str) -> bool:
        return any(digest(m) == want for m in marks_in(text))

    scan = Scan(transcript, offset)
    if scan.find(MARK_OPEN.encode(), match):
        return newest
    if settle <= 0 or not is_file(transcript):
        return None
    import time

    end = time.monotonic() + settle
    calling = False
    while True:
        for line in scan.seen:
            if b'"assistant"' not in line and b'"user"' not in line:
                continue  # neither the model's entry nor the client's
            with contextlib.suppress(ValueError):
                entry = safejson.loads(line)
                if isinstance(entry, dict) and entry.get("type") in ("assistant", "user"):
                    calling = asks_for_tool(entry)
        if calling or time.monotonic() >= end:
            return None
        time.sleep(SETTLE_LOOK)
        if scan.find(MARK_OPEN.encode(), match):
            return newest
