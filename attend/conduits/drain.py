"""The Stop-hook drain, ``attend inbox --drain [--format plain|hook]``: at a turn end, hand the model
what is pending as one ``{"decision": "block", "reason": …}`` line.

- It serves enrolled sessions only; for anyone else it prints nothing and writes nothing.
- It claims (new/ -> claimed/) under the session's show lock, prints, then marks seen: print first,
  then record, so a crash between the two re-delivers rather than loses.
- It never loops the agent: a round counter with a ceiling of 5 consecutive blocks, reset by an
  empty drain; when ``stop_hook_active`` is set and the counter cannot be written, it delivers
  nothing (fails closed) and leaves the messages to the next conduit (the sensor loop, a waiter,
  the inbox socket) or turn. Every host's turn-end payload carries ``stop_hook_active``.
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
from typing import IO, TYPE_CHECKING, Any

from attend import layout as L
from attend import safejson
from attend.conduits import fastdrain, monitor
from attend.domain.attention import attention, disclosure
from attend.domain.core import framing, ids, rooms
from attend.domain.core.envelope import Signal
from attend.domain.messages import delivery
from attend.domain.sessions import mcp_markers, sessions
from attend.domain.sessions.context import Context
from attend.errors import AttendError
from attend.identity import Identity
from attend.layout import small_int
from attend.spool import Spool

if TYPE_CHECKING:
    from attend.domain.settings.config import Config

ROUNDS = "drain-rounds"
MAX_ROUNDS = 5  # consecutive blocking drains before the drain leaves the messages to another conduit
SHOW_WAIT = 2.0  # seconds the drain waits for another conduit mid-show before leaving it the messages
RENDER_MAX = 10  # messages rendered in one reason; the rest are counted
BODY_MAX = 2000  # characters of one body in a reason; the inbox has the rest
IDS_LISTED = 3  # ids named one by one on a collapsed line; a longer run by its first and last
FIRST_LINE = 80  # characters of a first line on a collapsed or folded line
REHEAT_LABEL = "[attend reheat]"  # the line that carries the judgment layer after the messages
# Where refused messages go, for every host: the sensor loop, a waiter, an inbox socket, or the next
# turn end that is not a chain of blocks (a turn the user starts).
# The reason's header says who wrote the messages. Agents are never the user; a human may be (the
# operator at another terminal), so a batch with a human's message says only what is sure of it.
FROM_PEERS = "from peers, not your user"
FROM_HUMANS = "from humans, not typed at your prompt"
FROM_BOTH = "from peers and humans, not typed at your prompt"
LEFT = "the messages stay pending for the next conduit or turn"


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
    muted: set[str] = field(default_factory=set)  # ids govern() kept from the model (marked seen, unshown)
    hint: bool = True  # the reason ends in the reply forms: a first shown batch, or the first since a compaction


def served(ctx: Context) -> Identity | None:
    """The caller if the drain serves it: an enrolled agent session (after any /clear move)."""
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
        previous = small_int(text)
    rounds = previous + 1
    try:
        spool.write_state(str(rounds).encode(), "sessions", sid, ROUNDS)
    except (OSError, AttendError):
        if stop_active:
            return None, f"cannot record the drain round — {LEFT}"
    if rounds > MAX_ROUNDS:
        return None, f"drain round {rounds} > {MAX_ROUNDS} in a row — {LEFT}"
    return rounds, None


@contextmanager
def claimed(spool: Spool, sid: str, *, yield_to_post: bool = False) -> Iterator[Batch]:
    """Claim everything pending (and whatever a dead conduit left in claimed/); on a clean exit of
    the block, mark it seen and record last-inbound. The show lock is held throughout.

    ``yield_to_post`` (the turn end): stop waiting for the lock once its holder's post is in the
    client's queue. The client shows a post only after its turn-end hook returns, so waiting on it
    held the post back SHOW_WAIT every time a message landed as a turn ended."""
    posted = (lambda: spool.exists(L.SESSIONS, sid, L.POSTED)) if yield_to_post else None
    with spool.show_lock(sid, timeout=SHOW_WAIT, unless=posted) as held:
        if not held:
            # Another conduit is mid-show (or stuck there): it shows these; a hook must never hang.
            yield Batch(sid, [], [], None, False, busy=True)
            return
        names = spool.listing(sid, "claimed")  # under the show lock: abandoned by a dead conduit
        names += spool.claim_all(sid, spool.listing(sid, "new"))
        batch = Batch(sid, [], [], sessions.take_notice(spool, sid), mcp_markers.mcp_live(spool, sid))
        batch.hint = not spool.exists(L.SESSIONS, sid, L.REPLY_HINT)
        shown, batch.warnings = delivery.read_claimed(spool, sid, names, 1 << 17)
        batch.names = [name for name, _ in shown]
        batch.signals = [sig for _, sig in shown]
        yield batch
        spool.mark_seen(sid, batch.names)
    # Muted mail was never shown: a reply with no id must not thread to it.
    others = [s.id for s in batch.signals if s.from_id != sid and s.id not in batch.muted]
    if others:
        sessions.set_last_inbound(spool, sid, max(others))
        if batch.hint:  # the reason carried the reply forms: later ones leave them out, until a compaction
            spool.create_exclusive(b"", L.SESSIONS, sid, L.REPLY_HINT)


# ---------------------------------------------------------------------- rendering


def clock(at: float) -> str:
    """Local time with the zone named (``16:40 CET``; an offset where the zone has no name), so a
    model whose sessions span zones, or that compares with a UTC log, reads the time rightly."""
    local = time.localtime(at)
    name = time.strftime("%Z", local)
    return time.strftime("%H:%M ", local) + (name if name.isalpha() else time.strftime("%z", local))


def render_one(sig: Signal) -> str:
    """A header line at the margin, then the body with every line indented (docs/architecture/
    conduits.md, "Framing"): no body line can pass for a header, the closing sentence or an id."""
    sender = framing.label(sig.sender)
    # A human is addressed by user name: said when it is not the name shown.
    user = framing.label(sig.from_id) if sig.from_kind == "human" else sender
    extra = f", from {user}" if user != sender else ""
    scope = framing.label(rooms.scope(sig.room))
    ref = ids.sent_form(sig.id)
    head = f"[{clock(sig.at)}] {sender} ({framing.kind(sig.from_kind, sig.client)}; {scope}, id {ref}{extra}):"
    lines = [head, *framing.indented(sig.body[:BODY_MAX])]
    if len(sig.body) > BODY_MAX:
        lines.append(f"(… cut at {BODY_MAX} characters: attend inbox {ref} has the rest)")
    return "\n".join(lines)


def closing(mcp: bool) -> str:
    """The reply forms, said at a session's first shown batch and again after each compaction."""
    reply = monitor.MCP_REPLY if mcp else 'attend reply "..."'
    send = monitor.MCP_SEND if mcp else 'attend send "..."'
    return f"{reply} (the newest) / {send} (new thread) / silence"


def ids_named(signals: list[Signal]) -> str:
    """Every message not shown in full is named by id, so ``attend inbox <id>`` fetches it; a long
    run (ids sort in send order) by its first and last, with ``attend inbox --from`` for the rest."""
    refs = [ids.sent_form(s.id) for s in signals]
    if len(refs) <= IDS_LISTED:
        return "id " + refs[0] if len(refs) == 1 else "ids " + ", ".join(refs)
    return f"ids {refs[0]} … {refs[-1]}"


def collapsed_line(thread: attention.Thread) -> str:
    """One margin line for a thread not shown in full: scope, senders, count, ids, first line."""
    first = thread.signals[0]
    kinds = {s.sender: framing.kind(s.from_kind, s.client) for s in thread.signals}
    named = [f"{framing.label(s)} ({kinds[s]})" for s in thread.senders[:3]]
    senders = ", ".join(named) + (" …" if len(thread.senders) > 3 else "")
    n = len(thread.signals)
    count = f"{n} messages, " if n > 1 else ""
    scope = framing.label(rooms.scope(first.room))
    return f"[{scope}] {senders} ({count}{ids_named(thread.signals)}): {monitor.one_line(first.body)[:FIRST_LINE]}"


def folded_line(sender: str, signals: list[Signal]) -> str:
    """One margin line for a sender the governor folds."""
    first = signals[0]
    project = framing.label(monitor.project_name(first.origin))
    who = f"{framing.label(first.sender)} ({framing.kind(first.from_kind, first.client)}; {project})"
    return (
        f"[folded] {who} sent {len(signals)} fast ({ids_named(signals)}; attend inbox --from "
        f"{framing.label(first.sender)}): {monitor.one_line(first.body)[:FIRST_LINE]}"
    )


@dataclass
class Arranged:
    """What a drain shows of a batch: full messages (party threads first), one line per collapsed
    thread or folded sender, and the party messages past the cap, named by id."""

    full: list[Signal] = field(default_factory=list)
    collapsed: list[attention.Thread] = field(default_factory=list)
    folded: dict[str, list[Signal]] = field(default_factory=dict)
    overflow: list[Signal] = field(default_factory=list)
    muted: int = 0

    @property
    def count(self) -> int:
        shown = len(self.full) + len(self.overflow) + sum(len(t.signals) for t in self.collapsed)
        return shown + sum(map(len, self.folded.values()))


def arrange(signals: list[Signal], party: attention.Party, governor: attention.Governor | None = None) -> Arranged:
    """Party threads in full up to the cap; other traffic in full when it fits, else one line per
    thread; a sender past its burst (the governor) folded into one line, unless it writes to us."""
    out = Arranged()
    groups = attention.threads(signals, party)
    loud: dict[str, int] = {}
    for sig in signals:
        loud[sig.from_id] = loud.get(sig.from_id, 0) + 1
    rest: list[attention.Thread] = []
    for t in groups:
        if t.party:
            for sig in t.signals:
                (out.full if len(out.full) < RENDER_MAX else out.overflow).append(sig)
            continue
        kept = []
        for sig in t.signals:
            burst = governor.rules.burst if governor is not None else attention.BURST
            folding = loud[sig.from_id] > burst or (governor is not None and governor.folding(sig.from_id))
            if folding:
                out.folded.setdefault(sig.from_id, []).append(sig)
            else:
                kept.append(sig)
        if kept:
            rest.append(attention.Thread(t.root, False, kept))
    room = RENDER_MAX - len(out.full)
    if sum(len(t.signals) for t in rest) <= room:
        out.full.extend(sig for t in rest for sig in t.signals)
    else:
        out.collapsed = rest
    return out


def authors(shown: Arranged) -> str:
    """Who wrote what the reason shows, for its header: peers (agents), humans, or both."""
    signals = shown.full + shown.overflow + [s for t in shown.collapsed for s in t.signals]
    kinds = {s.from_kind for s in signals + [s for sigs in shown.folded.values() for s in sigs]}
    if "human" not in kinds:
        return FROM_PEERS
    return FROM_BOTH if kinds - {"human"} else FROM_HUMANS


def render_reason(batch: Batch, arranged: Arranged | None = None) -> str:
    shown = arranged if arranged is not None else Arranged(full=batch.signals[:RENDER_MAX])
    if arranged is None:
        shown.overflow = batch.signals[RENDER_MAX:]
    n = shown.count
    if n == 0:
        return f"[attend] {batch.note}"
    # Every host hands this text to the model inside its own frame, and Gemini's is the next user
    # text itself: the header says who wrote what follows, in as few bytes as it can.
    lines = [f"[attend] {n} message(s) {authors(shown)}:"]
    if batch.note:
        lines.append(f"({batch.note})")
    lines.extend(render_one(s) for s in shown.full)
    lines.extend(collapsed_line(t) for t in shown.collapsed)
    lines.extend(folded_line(sender, sigs) for sender, sigs in shown.folded.items())
    if shown.overflow:
        lines.append(f"(+{len(shown.overflow)} more for you: {ids_named(shown.overflow)})")
    if batch.hint:
        lines.append(closing(batch.mcp))
    return "\n".join(lines)


def with_reheat(spool: Spool, batch: Batch, reason: str, cfg: Config | None) -> str:
    """The reason, and the reheat after it when the disclosure rules say it is due (a message from
    another party shown: the first, or the first after a stretch; attend/domain/attention/disclosure.py). The
    waiter's wake carries it; the turn-end drain does not, so its wrapper stays within budget."""
    if not any(s.from_id != batch.sid for s in batch.signals):
        return reason
    said = disclosure.take(spool, batch.sid, cfg, time.time(), batch.mcp)
    return f"{reason}\n{REHEAT_LABEL} {said}" if said else reason


def render_plain(batch: Batch) -> str:
    blocks = []
    shown = [s for s in batch.signals if s.id not in batch.muted]
    for sig in shown:
        kind = framing.kind(sig.from_kind, sig.client)
        lines = [
            f"[{framing.label(rooms.scope(sig.room))}] {framing.label(sig.sender)} ({kind})",
            f"  when:    {clock(sig.at)}",
            f"  id:      {sig.id}",
            f"  from:    {framing.inline(sig.from_id)}",
            f"  origin:  {framing.inline(sig.origin)}",
            *framing.hanging("  message: ", sig.body),
        ]
        blocks.append("\n".join(lines))
    if batch.note:
        blocks.append(f"({batch.note})")
    muted = f" ({len(batch.muted)} muted: marked seen, not shown; attend inbox lists them)" if batch.muted else ""
    blocks.append(f"{len(shown)} message(s) drained{muted}")
    return "\n\n".join(blocks)


# ---------------------------------------------------------------------- the two forms


def _payload(data: bytes) -> dict[str, Any]:
    try:
        raw = safejson.loads(data.decode("utf-8", "replace") or "{}")
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
        with claimed(spool, sid, yield_to_post=True) as batch:
            for warning in batch.warnings:
                report(spool, err, f"attend: {warning}")
            arranged = govern(spool, who.origin, batch)
            if not arranged.count and not batch.note:
                end_chain(spool, sid)  # nothing, or only muted mail: marked seen, never shown
                return
            reason = render_reason(batch, arranged)
            out.write(json.dumps(turn_end(who, reason), ensure_ascii=False) + "\n")
            out.flush()
            blocked = True
    finally:
        fastdrain.verdict(spool, sid, data, blocked)


def turn_end(who: Identity, reason: str) -> dict[str, str]:
    """The line that hands the model ``reason`` in the caller's client: Claude Code's and Codex's Stop
    hook block, Gemini CLI's AfterAgent deny (attend/hosts)."""
    from attend import hosts

    return hosts.of(who.host).turn_end(reason)


def govern(spool: Spool, origin: str, batch: Batch) -> Arranged:
    """The batch as the model sees it: mutes dropped, party threads first, loud senders folded; each
    line counted against its sender in the session's governor (docs/architecture/conduits.md). The
    drain and the waiter both show through it, so they fold and mute alike."""
    mute = attention.muted(attention.mutes(spool, batch.sid))
    visible = [s for s in batch.signals if not mute(s)]
    batch.muted = {s.id for s in batch.signals if mute(s)}
    governor = attention.Governor.load(spool, batch.sid)  # with the rules the loop last saved
    arranged = arrange(visible, attention.party_of(spool, batch.sid, origin), governor)
    arranged.muted = len(batch.signals) - len(visible)
    for sig in arranged.full:
        governor.record(sig.from_id)
    for t in arranged.collapsed:
        for sender in dict.fromkeys(s.from_id for s in t.signals):
            governor.record(sender)
    for sender in arranged.folded:
        governor.record(sender)
        governor.note_fold(sender)
    with contextlib.suppress(OSError, AttendError):  # a governor that cannot be saved forgets, no more
        governor.save()
    return arranged


def plain(ctx: Context, out: IO[str], err: IO[str]) -> None:
    who = served(ctx)
    if who is None:
        err.write("attend: not an enrolled agent session, so there is nothing to drain\n")
        out.write("no pending messages\n")
        return
    sessions.touch_heartbeat(ctx.spool, who.id)
    with claimed(ctx.spool, who.id) as batch:
        # Mutes hold here as in the hook form: a muted message is never shown, nor replied to by default.
        mute = attention.muted(attention.mutes(ctx.spool, who.id))
        batch.muted = {s.id for s in batch.signals if mute(s)}
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
        sid = safejson.text_field(payload, "session_id", 128)
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
