"""The re-presentation after a compaction, ``attend recall --hook``: Claude Code's SessionStart hook
under matcher ``compact`` (docs/architecture/compaction.md).

A compaction drops every message the model was shown. This hook gives back, once, the threads shown
since the last compaction (or since the session began) that the session has not answered: one line
each, id, sender, first line. After them comes the reheat (the judgment layer), and the disclosure
stamp says it was said, so the loop does not say it again at the next message.

- The reply forms, which a conduit says only at a session's first shown message, are said again at
  the next one: the hook removes ``sessions/<sid>/reply-hint``.
- **Shown** is what a conduit moved to the session's ``cur/`` (the loop, the drain and the waiter
  mark a shown delivery seen there). The hook saves the names it found (``sessions/<sid>/compacted``);
  the next compaction re-presents only names not in that list. Nothing is written on the hot path.
- **Answered** is a message of the session's own whose ``Re`` (or thread) names it, found in the
  message's own room after it.
- It serves an enrolled session whose Claude is among its ancestors, and only for ``source:
  "compact"``; a payload naming another session (or a hook with no session above it) is refused
  with one stderr line (and the diagnostic log), nothing read or written; for a session attend
  does not serve it prints nothing. It fails open: any error is one stderr line (and the log), exit 0.
- Its output is one ``hookSpecificOutput.additionalContext``: the client puts it before the model
  at the next turn, inside the system message that follows the summary (measured).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import IO, Any

from attend import identity, safejson
from attend import layout as L
from attend.conduits import fastdrain, monitor
from attend.domain.attention import attention, disclosure, reheat
from attend.domain.core import envelope, framing
from attend.domain.core.envelope import EnvelopeError, Signal
from attend.domain.sessions import mcp_markers
from attend.errors import IdentityError
from attend.spool import Spool

LISTED = 10  # threads named one a line; the rest are counted
FIRST_LINE = 80  # characters of a first line
SCAN_MAX = 5000  # room records read at most when looking for the session's own answers
RECORD_MAX = 1 << 16  # bytes read of one record (the headers and a first line are near its start)
LABEL = "[attend]"
REHEAT_LABEL = "[attend reheat]"


def shown_since(spool: Spool, sid: str) -> tuple[list[str], list[str]]:
    """(every entry in cur/, those not shown before the last compaction)."""
    cur = spool.listing(sid, L.CUR)
    try:
        raw = spool.read_text(L.SESSIONS, sid, L.COMPACTED)
        before = set(safejson.loads(raw).get("shown", [])) if raw else set()
    except (OSError, ValueError, AttributeError):
        before = set()
    return cur, [e for e in cur if e not in before]


def _read(spool: Spool, *parts: str) -> Signal | None:
    try:
        return envelope.parse(spool.read(*parts, limit=RECORD_MAX))
    except (OSError, EnvelopeError, ValueError):
        return None


def answered(spool: Spool, sid: str, shown: list[Signal]) -> set[str]:
    """The ids among ``shown`` that the session answered: it sent a message whose ``Re`` is the id, or
    whose thread runs through it. A reply lives in its parent's room, after it."""
    wanted = {s.id for s in shown}
    found: set[str] = set()
    budget = SCAN_MAX
    for room in dict.fromkeys(s.room for s in shown):
        first = min(s.id for s in shown if s.room == room)
        for name in reversed(spool.room_names(room)):  # newest first: answers come soon after
            if name <= first or budget <= 0:
                break
            budget -= 1
            sig = _read(spool, L.ROOMS, room, L.NEW, name)
            if sig is None or sig.from_id != sid or sig.re is None:
                continue
            found.update(wanted & {sig.re, *sig.ancestors})
    return found


def unanswered(spool: Spool, sid: str, entries: list[str]) -> list[Signal]:
    mute = attention.muted(attention.mutes(spool, sid))
    shown = [
        sig
        for entry in entries
        if (sig := _read(spool, L.SESSIONS, sid, L.CUR, entry)) is not None and sig.from_id != sid and not mute(sig)
    ]
    done = answered(spool, sid, shown)
    return [s for s in shown if s.id not in done]


def render(signals: list[Signal], mcp: bool) -> list[str]:
    if not signals:
        return []
    n = len(signals)
    lines = [f"{LABEL} before the compaction you were shown {n} message{'s' if n > 1 else ''} not yet answered:"]
    for sig in signals[-LISTED:]:
        first = monitor.one_line(sig.body)[:FIRST_LINE]
        lines.append(f"- {sig.id} {framing.label(sig.sender)}: {first}")
    if n > LISTED:
        lines.append(f"(+{n - LISTED} older: attend inbox)")
    how = "reply with re=<id>" if mcp else 'attend reply --re <id> "..."'
    lines.append(f"{how} answers one; attend inbox <id> shows it whole.")
    return lines


def _config(env: Mapping[str, str], cwd: str) -> Any:
    from attend.domain.settings import config  # yaml only when a config file exists, once per compaction

    return config.load(env, config.project_of(cwd))


def recall(spool: Spool, sid: str, env: Mapping[str, str], cwd: str, now: float) -> str:
    """The text for the model (empty when there is nothing to say); saves what was shown and stamps
    the reheat as said."""
    cur, since = shown_since(spool, sid)
    mcp = mcp_markers.mcp_live(spool, sid)
    lines = render(unanswered(spool, sid, since), mcp)
    cfg = _config(env, cwd)
    if disclosure.enabled(cfg):
        lines.append(f"{REHEAT_LABEL} {reheat.wording(mcp)}")
    spool.write_state(json.dumps({"at": now, "shown": cur}).encode(), L.SESSIONS, sid, L.COMPACTED)
    # The reply forms went with the compaction: the next conduit to show a message says them again.
    spool.remove(L.SESSIONS, sid, L.REPLY_HINT)
    if disclosure.enabled(cfg):
        disclosure.said_after_compaction(spool, sid, now)
    return "\n".join(lines)


def hook_main(data: bytes, env: Mapping[str, str], out: IO[str], err: IO[str]) -> int:
    """Entry for the hook form, the SessionStart payload already read. Always 0."""
    spool: Spool | None = None
    try:
        payload = safejson.loads(data or b"{}")
        if not isinstance(payload, dict) or payload.get("source") != "compact":
            return 0
        sid = safejson.text_field(payload, "session_id", 128)
        if sid is None or not L.is_session_id(sid):
            return 0
        spool = Spool(L.default_root(env))
        if not spool.present((L.SESSIONS, sid), (L.ENROLLED,))[0]:
            return 0  # not a session attend serves: nothing said, nothing written
        try:  # the authority rule's hook form: only the session that runs the hook
            identity.authority(claimed=sid, env=env, hook=True)
        except IdentityError as e:
            _report(spool, err, f"attend recall: {e}")  # refused before anything is read or written
            return 0
        spool.check()
        cwd = safejson.text_field(payload, "cwd")
        text = recall(spool, sid, env, cwd or os.getcwd(), time.time())
        if text:
            context = {"hookEventName": "SessionStart", "additionalContext": text}
            out.write(json.dumps({"hookSpecificOutput": context}, ensure_ascii=False) + "\n")
            out.flush()
    except Exception as e:  # never break the session's start after a compaction
        _report(spool, err, f"attend recall: the re-presentation failed ({type(e).__name__}: {e})")
    return 0


def _report(spool: Spool | None, err: IO[str], line: str) -> None:
    """One stderr line, and the diagnostic log when there is a spool; never raises."""
    try:
        err.write(line + "\n")
        if spool is not None:
            spool.log(line)
    except Exception:
        pass


USAGE = "attend recall runs as Claude Code's SessionStart hook (matcher compact) only: attend recall --hook"


def main(argv: list[str], env: Mapping[str, str], out: IO[str], err: IO[str]) -> int:
    """``attend recall …`` from the console entry, before click is imported."""
    if argv != ["--hook"]:
        err.write(f"attend: {USAGE}\n")
        return 2
    return hook_main(fastdrain.read_payload(), env, out, err)
