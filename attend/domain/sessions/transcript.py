"""What a session's transcript says about its context: the last usage the model reported, as the real
client writes it (``<claude dir>/projects/<slug>/<session>.jsonl``, one JSON entry a line; an assistant
entry carries ``message.model`` and ``message.usage``), and, for ``attend tune``, the user's turn cadence.

The context is ``input + cache_read + cache_creation`` tokens of the last usage, against the model's
window. Only the tail is read: a transcript grows to megabytes, and the last usage is near its end.
Nothing here writes; a transcript that is absent or unreadable is "no figure", never an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime

from attend import identity, safejson

# A transcript's path is a str: it is only opened and stat'd, and pathlib would cost every sensor loop
# ~0.6 MB (the context sensor looks each minute). ``attend tune`` lists them as Paths.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_WINDOW = 200_000  # tokens: every current Claude model's window, unless the id says 1M
LONG_WINDOW = 1_000_000  # a model id ending in [1m] (the 1M-context beta), as the client names it
BLOCK = 64 * 1024
TAIL_LIMIT = 4 * 1024 * 1024  # read no more than this from the end looking for a usage
SYNTHETIC = "<synthetic>"  # the client's own stand-in entries (an API error, an interrupt): no real usage


@dataclass(frozen=True)
class Usage:
    model: str
    tokens: int  # input + cache_read + cache_creation: what the next turn sends again
    cache_read: int
    cache_write: int
    at: float  # the entry's timestamp (epoch seconds); 0 when it has none

    @property
    def window(self) -> int:
        return LONG_WINDOW if self.model.lower().endswith("[1m]") else DEFAULT_WINDOW

    @property
    def percent(self) -> int:
        return min(999, round(100 * self.tokens / self.window))


def path_for(env: Mapping[str, str], session_id: str, cwd: str | None) -> str | None:
    return identity.transcript_path(env, session_id, cwd)


def of_session(env: Mapping[str, str], who: identity.Identity) -> str | None:
    """A resolved session's transcript: named by the session's own working directory (its record's
    ``cwd``), which the normalised origin may not be (a worktree, a subfolder)."""
    return of_claude(env, who.id, who.claude_pid, who.origin)


def of_claude(env: Mapping[str, str], session_id: str, claude_pid: int | None, cwd: str | None) -> str | None:
    """As ``of_session``, from the parts a hook has (its session id, ``CLAUDE_PID``, its cwd)."""
    if claude_pid is not None:
        record = identity.read_record(identity.sessions_home(env), claude_pid)
        if record is not None and record.cwd:
            cwd = record.cwd
    return path_for(env, session_id, cwd)


def _lines_from_end(path: str) -> Iterator[bytes]:
    """The file's complete lines, last first, reading blocks backwards up to TAIL_LIMIT."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        end = os.fstat(fd).st_size
        carry = b""
        pos = end
        while pos > 0 and end - pos < TAIL_LIMIT:
            size = min(BLOCK, pos)
            pos -= size
            chunk = os.pread(fd, size, pos) + carry
            parts = chunk.split(b"\n")
            carry = parts[0]  # may be the tail of an earlier line: kept for the next block
            yield from reversed([p for p in parts[1:] if p.strip()])
        if pos == 0 and carry.strip():
            yield carry
    finally:
        os.close(fd)


def _epoch(stamp: object) -> float:
    if not isinstance(stamp, str):
        return 0.0
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def usage_of(entry: object) -> Usage | None:
    """The usage of one transcript entry, when it is an assistant turn with a real model."""
    if not isinstance(entry, dict) or entry.get("type") != "assistant":
        return None
    message = entry.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
        return None
    model = str(message.get("model") or "")
    if model == SYNTHETIC:
        return None
    u = message["usage"]

    def n(key: str) -> int:
        value = u.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    read, write = n("cache_read_input_tokens"), n("cache_creation_input_tokens")
    return Usage(model, n("input_tokens") + read + write, read, write, _epoch(entry.get("timestamp")))


def last_usage(path: str | None) -> Usage | None:
    if path is None:
        return None
    for line in _lines_from_end(path):
        if b'"usage"' not in line:
            continue  # most lines are tool results and user turns: not worth parsing
        try:
            found = usage_of(safejson.loads(line))
        except ValueError:
            continue
        if found is not None:
            return found
    return None


def mtime(path: str | None) -> float | None:
    if path is None:
        return None
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


# ---------------------------------------------------------------------- the user's cadence (tune)


def all_transcripts(env: Mapping[str, str]) -> list[Path]:
    root = identity.claude_dir(env) / "projects"
    try:
        return sorted(p for p in root.glob("*/*.jsonl") if p.is_file())
    except OSError:
        return []


def turn_gaps(path: str | Path, limit: int = 8 * 1024 * 1024) -> list[float]:
    """Seconds from each assistant answer to the user's next prompt: the user's own turn cadence.
    Tool results come back as user entries too; only a prompt the user typed (a string content, or
    text without a tool_result) counts."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit)
    except OSError:
        return []
    gaps: list[float] = []
    last_answer = 0.0
    for line in data.splitlines():
        try:
            entry = safejson.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        at = _epoch(entry.get("timestamp"))
        if not at:
            continue
        if entry.get("type") == "assistant":
            last_answer = at
        elif entry.get("type") == "user" and last_answer and _typed(entry):
            if at > last_answer:
                gaps.append(at - last_answer)
            last_answer = 0.0
    return gaps


def _typed(entry: dict[str, object]) -> bool:
    message = entry.get("message")
    if not isinstance(message, dict):
        return False
    content = message.get("content")
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(
        isinstance(c, dict) and c.get("type") == "tool_result" for c in content
    )
