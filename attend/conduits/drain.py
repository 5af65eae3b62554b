"""The Stop-hook drain, ``attend inbox --drain [--format plain|hook]``: at a turn end, hand the model
what is pending as one ``{"decision": "block", "reason": …}`` line.

- It serves enrolled sessions only; for anyone else it prints nothing and writes nothing.
- It claims (new/ -> claimed/) under the session's show lock, prints, then marks seen: print first,
  then record, so a crash between the two re-delivers rather than loses.
- It never loops the agent: a round counter with a ceiling of 5 consecutive blocks, reset by an
  empty drain; when ``stop_hook_active`` is set and the counter cannot be written, it delivers
  nothing (fails closed) and leaves the messages to the sensor loop.
- It never breaks the agent: in hook form any internal error is one stderr line (and one line in
  the spool's diagnostic log, since Claude Code swallows hook stderr), and exit 0.

The empty case never gets here: ``attend.conduits.fastdrain`` decides it before anything heavy is imported.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

from attend.conduits import fastdrain, monitor
from attend.domain import delivery, framing, mcp_markers, rooms, sessions
from attend.domain.context import Context
from attend.domain.envelope import Signal
from attend.errors import AttendError
from attend.identity import Identity
from attend.spool import Spool

ROUNDS = "drain-rounds"
MAX_ROUNDS = 5  # consecutive blocking drains before the drain defers to the Monitor conduit
SHOW_WAIT = 2.0  # seconds the drain waits for another conduit mid-show before leaving it the messages
RENDER_MAX = 10  # messages rendered in one reason; the rest are counted
BODY_MAX = 2000  # characters of one body in a reason; the inbox has the rest


@dataclass
class Batch:
    """Deliveries one drain has claimed and is about to show."""

    sid: str
    names: list[str]
    signals: list[Signal]
    note: str | None
    mcp: bool
    warnings: list[str] = field(default_factory=list)
    busy: bool = False  # another conduit held the show lock: it shows what is pending


def served(ctx: Context) -> Identity | None:
    """The caller if the drain serves it: an enrolled Claude session (after any /clear move)."""
    try:
        who = ctx.who()
    except AttendError:
        return None
    if not who.is_agent:
        return None
    if not sessions.is_enrolled(ctx.spool, who.id) and sessions.follow_clear(ctx.spool, who) is None:
        return None
    return who


def _pending(spool: Spool, sid: str) -> bool:
    return bool(spool.listing(sid, "new") or spool.listing(sid, "claimed") or spool.exists("sessions", sid, "notice"))


def end_chain(spool: Spool, sid: str) -> None:
    """An empty drain ends the chain of blocking rounds."""
    with contextlib.suppress(OSError):  # something that is not a file sits there; the next write says so
        spool.remove("sessions", sid, ROUNDS)


def next_round(spool: Spool, sid: str, stop_active: bool) -> tuple[int | None, str | None]:
    """(round number, None), or (None, why nothing may be delivered this time)."""
    previous = 0
    if stop_active:
        try:
            text = spool.read_text("sessions", sid, ROUNDS)
        except OSError:
            text = None
        previous = int(text) if text and text.strip().isdigit() else 0
    rounds = previous + 1
    try:
        spool.write_state(str(rounds).encode(), "sessions", sid, ROUNDS)
    except (OSError, AttendError):
        if stop_active:
            return None, "cannot record the drain round — deferring to the Monitor conduit"
    if rounds > MAX_ROUNDS:
        return None, f"drain round {rounds} > {MAX_ROUNDS} — deferring to the Monitor conduit"
    return rounds, None


@contextmanager
def claimed(spool: Spool, sid: str) -> Iterator[Batch]:
    """Claim everything pending (and whatever a dead conduit left in claimed/); on a clean exit of
    the block, mark it seen and record last-inbound. The show lock is held throughout."""
    with spool.show_lock(sid, timeout=SHOW_WAIT) as held:
        if not held:
            # Another conduit is mid-show (or stuck there): it shows these; a hook must never hang.
            yield Batch(sid, [], [], None, False, busy=True)
            return
        names = spool.listing(sid, "claimed")  # under the show lock: abandoned by a dead conduit
        names += spool.claim_all(sid, spool.listing(sid, "new"))
        batch = Batch(sid, [], [], sessions.take_notice(spool, sid), mcp_markers.mcp_live(spool, sid))
        shown, batch.warnings = delivery.read_claimed(spool, sid, names, 1 << 17)
        batch.names = [name for name, _ in shown]
        batch.signals = [sig for _, sig in shown]
        yield batch
        spool.mark_seen(sid, batch.names)
    others = [s.id for s in batch.signals if s.from_id != sid]
    if others:
        sessions.set_last_inbound(spool, sid, max(others))
        spool.create_exclusive(b"", "sessions", sid, "reply-hint")  # the reason carried the reply forms


# ---------------------------------------------------------------------- rendering


def clock(at: float) -> str:
    return time.strftime("%H:%M", time.localtime(at))


def render_one(sig: Signal) -> str:
    """A header line at the margin, then the body with every line indented (docs/architecture/
    conduits.md, "Framing"): no body line can pass for a header, the closing sentence or an id."""
    extra = f", from {framing.label(sig.from_id)}" if sig.from_kind == "human" else ""
    scope = framing.label(rooms.scope(sig.room))
    head = f"[{clock(sig.at)}] {framing.label(sig.sender)} ({scope}, id {sig.id}{extra}):"
    lines = [head, *framing.indented(sig.body[:BODY_MAX])]
    if len(sig.body) > BODY_MAX:
        lines.append(f"(… cut at {BODY_MAX} characters: attend inbox {sig.id} has the rest)")
    return "\n".join(lines)


def closing(mcp: bool) -> str:
    reply = f"{monitor.MCP_REPLY}" if mcp else 'attend reply "..."'
    send = f"{monitor.MCP_SEND}" if mcp else 'attend send "..."'
    return (
        f"You may reply ({reply} auto-threads to the newest), start a new thread ({send}), "
        "or continue your work — silence is a valid reply."
    )


def render_reason(batch: Batch) -> str:
    n = len(batch.signals)
    if n == 0:
        return f"[attend] {batch.note}"
    lines = [f"[attend] {n} peer message(s) delivered at the turn boundary:"]
    if batch.note:
        lines.append(f"({batch.note})")
    lines.append("")
    lines.extend(render_one(s) for s in batch.signals[:RENDER_MAX])
    if n > RENDER_MAX:
        lines.append(f"(+{n - RENDER_MAX} more — attend inbox for the rest)")
    lines.append("")
    lines.append(closing(batch.mcp))
    return "\n".join(lines)


def render_plain(batch: Batch) -> str:
    blocks = []
    for sig in batch.signals:
        lines = [
            f"[{framing.label(rooms.scope(sig.room))}] {framing.label(sig.sender)}",
            f"  when:    {clock(sig.at)}",
            f"  id:      {sig.id}",
            f"  from:    {framing.inline(sig.from_id)}",
            f"  origin:  {framing.inline(sig.origin)}",
            *framing.hanging("  message: ", sig.body),
        ]
        blocks.append("\n".join(lines))
    if batch.note:
        blocks.append(f"({batch.note})")
    blocks.append(f"{len(batch.signals)} message(s) drained")
    return "\n\n".join(blocks)


# ---------------------------------------------------------------------- the two forms


def _payload(data: bytes) -> dict[str, Any]:
    try:
        raw = json.loads(data.decode("utf-8", "replace") or "{}")
    except ValueError:
        return {}
    return raw if isinstance(raw, dict) else {}


def hook(ctx: Context, payload: dict[str, Any], out: IO[str], err: IO[str], data: bytes = b"") -> None:
    """The hook form: one block line when something is pending, nothing otherwise. Either way the
    verdict is left for the waiter this turn end started (``fastdrain.verdict``)."""
    stop_active = payload.get("stop_hook_active") is True
    who = served(ctx)
    if who is None:
        return
    spool, sid = ctx.spool, who.id
    blocked = False
    try:
        sessions.touch_heartbeat(spool, sid)
        if not _pending(spool, sid):
            end_chain(spool, sid)
            return
        _, refusal = next_round(spool, sid, stop_active)
        if refusal:
            report(spool, err, f"({refusal})")
            return
        with claimed(spool, sid) as batch:
            for warning in batch.warnings:
                report(spool, err, f"attend: {warning}")
            if not batch.signals and not batch.note:
                end_chain(spool, sid)
                return
            out.write(json.dumps({"decision": "block", "reason": render_reason(batch)}, ensure_ascii=False) + "\n")
            out.flush()
            blocked = True
    finally:
        fastdrain.verdict(spool, sid, data, blocked)


def plain(ctx: Context, out: IO[str], err: IO[str]) -> None:
    who = served(ctx)
    if who is None:
        err.write("attend: not an enrolled Claude session, so there is nothing to drain\n")
        out.write("no pending messages\n")
        return
    sessions.touch_heartbeat(ctx.spool, who.id)
    with claimed(ctx.spool, who.id) as batch:
        for warning in batch.warnings:
            err.write(f"attend: {warning}\n")
        if batch.busy:
            out.write("another conduit (the sensor loop, or a drain) is showing what is pending; nothing drained\n")
        elif not batch.signals and not batch.note:
            out.write("no pending messages\n")
        else:
            out.write(render_plain(batch) + "\n")
        out.flush()


def report(spool: Spool, err: IO[str], line: str) -> None:
    """One stderr line, also kept in the diagnostic log: Claude Code swallows hook stderr."""
    err.write(line + "\n")
    spool.log(line)


def hook_main(data: bytes, out: IO[str], err: IO[str]) -> int:
    """Entry for the hook form with the Stop payload already read. Always exits 0."""
    spool: Spool | None = None
    try:
        payload = _payload(data)
        sid = payload.get("session_id")
        spool = Spool.open(create=False)  # made by the first write, if a drain ever writes
        ctx = Context(spool=spool, payload_sid=sid if isinstance(sid, str) and sid else None)
        hook(ctx, payload, out, err, data)
    except BrokenPipeError:
        pass
    except Exception as e:  # never break the agent's turn end
        why = str(e) if isinstance(e, AttendError) else f"{type(e).__name__}: {e}"  # ours are one line already
        line = f"attend: the drain failed ({why}); messages stay pending for the next conduit"
        try:
            err.write(line + "\n")
            if spool is not None:  # a spool that was refused gets nothing written into it
                spool.log(line)
        except Exception:
            pass
    return 0
