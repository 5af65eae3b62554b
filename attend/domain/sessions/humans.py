"""The human's own mailbox: ``humans/<user>/{tmp,new,cur}``, a maildir like a session's.

- What is addressed to a human (``send --to <user>``, a reply to its message) is recorded in its room
  ``h-<user>`` and linked into its mailbox by the fan-out, exactly once, under the same rule and lock
  as a session's deliveries. ``attend inbox`` claims what is new, shows it, and marks it seen.
- A human who sent or read (``send``, ``reply``, ``inbox``) touches ``humans/<user>/active``: one
  ``utime``. ``peers`` lists those active in the last RECENT_SECONDS, and send counts them as live.
- A human can be addressed by name once it has a mailbox (it used the bus), or when it is the human
  running the command; never by an agent's say-so (addressing.py). Only a human makes its own mailbox
  (an agent's process is never resolved as the human), and not under a session's display name.
"""

from __future__ import annotations

import time

from attend.domain.core import envelope
from attend.domain.core.envelope import EnvelopeError, Signal
from attend.errors import UsageError
from attend.layout import ACTIVE, CLAIMED, HUMANS, NEW, is_user_name, user_key
from attend.record import Record
from attend.spool import Spool

RECENT_SECONDS = 12 * 3600  # a human who sent or read in the last 12 hours is listed by peers, and counted live
REPAIR_WINDOW = 200  # newest records of a human's room checked on each read (a sender killed mid fan-out)


class Human(Record):
    user: str
    active_at: float  # when it last sent or read (epoch seconds)


def mailbox(human_id: str) -> str | None:
    """The mailbox folder name of a human id, or None when it cannot be one (never a path)."""
    user = user_key(human_id)
    return user if is_user_name(user) else None


def user_of_room(room: str) -> str | None:
    """The user whose own room ``h-<user>`` this is; None for any other room."""
    return room[2:] if room.startswith("h-") and is_user_name(room[2:]) else None


def note_active(spool: Spool, human_id: str) -> None:
    """Record that this human used the bus now; its mailbox is made on first use, unless its name is
    a session's display name or alias (``Nico``, ``Ava-alpha``), case aside: a mailbox of that name
    would take the session's mail. A persona alone (``Ava``) is a common first name, so a human may
    have it; a bare name that is both is then refused by addressing, naming the explicit forms."""
    user = mailbox(human_id)
    if user is None:
        return
    if not spool.exists(HUMANS, user):
        from attend.domain.sessions import sessions

        taken = set()
        for _key, _sid, entry in sessions.all_registrations(spool):
            persona = str(entry.get("persona") or "")
            if persona and entry.get("ordinal"):
                taken.add(sessions.display(persona, entry, sessions.stored_name(entry)).lower())
                taken.add(sessions.alias(persona, entry).lower())
        if user.lower() in taken:
            raise UsageError(
                f"the user name {user!r} is a session's display name or alias, so it cannot name a human's mailbox; "
                "set USER to your own name"
            )
    spool.make_maildir(user, HUMANS)
    spool.touch(HUMANS, user, ACTIVE)


def known(spool: Spool) -> list[str]:
    """Every human with a mailbox: those who used the bus, or were written to."""
    return [u for u in spool.names(HUMANS) if is_user_name(u)]


def recent(spool: Spool, now: float | None = None, within: float = RECENT_SECONDS) -> list[Human]:
    """Humans who sent or read in the last ``within`` seconds, most recent first."""
    now = time.time() if now is None else now
    out = []
    for user in known(spool):
        at = spool.mtime(HUMANS, user, ACTIVE)
        if at is not None and now - at < within:
            out.append(Human(user, at))
    out.sort(key=lambda h: -h.active_at)
    return out


def is_recent(spool: Spool, user: str, now: float | None = None) -> bool:
    at = spool.mtime(HUMANS, user, ACTIVE)
    return at is not None and (time.time() if now is None else now) - at < RECENT_SECONDS


def deliver(spool: Spool, room: str, name: str, sender_id: str) -> list[str]:
    """Fan one record of room ``room`` out to the human it addresses (never back to its sender);
    the users it was linked to."""
    user = user_of_room(room)
    if user is None or user == sender_id:
        return []
    return [user] if spool.link_to_human(room, name, user) else []


def repair(spool: Spool, user: str, window: int = REPAIR_WINDOW) -> int:
    """Link the newest records of the human's room that its mailbox lacks: a sender killed between
    the room record and the link leaves it short, and no loop of the human's repairs it."""
    room = "h-" + user
    linked = 0
    for name in spool.room_names(room)[-window:]:
        if spool.has_delivery(user, name, HUMANS):
            continue
        try:
            headers, _ = envelope.parse_headers(spool.read_record(room, name, 4096))
        except (OSError, EnvelopeError):
            continue
        if headers.get("From-Id") != user:
            try:
                linked += spool.link_to_human(room, name, user)
            except FileNotFoundError:
                continue  # swept since the listing
    return linked


def read_unread(spool: Spool, human_id: str) -> tuple[list[tuple[str, Signal]], list[str]]:
    """The human's unread mail, oldest first, marked read as it is taken: claimed from new/ (with
    whatever a reader that died mid-read left in claimed/), parsed, then moved to cur/ with the Seen
    flag, through the gate's claim and seen routines. A warning per unreadable one, which is set aside
    into quarantine/ (never shown, never lost)."""
    user = mailbox(human_id)
    if user is None:
        return [], []
    repair(spool, user)
    shown: list[tuple[str, Signal]] = []
    warnings: list[str] = []
    with spool.show_lock(user, top=HUMANS):  # one reader at a time: each unread message is shown once
        fresh = spool.listing(user, NEW, HUMANS)
        won = spool.claim_all(user, fresh, HUMANS) if fresh else []
        names = sorted({*spool.listing(user, CLAIMED, HUMANS), *won})
        if not names:
            return shown, warnings
        with spool.folder(HUMANS, user, CLAIMED) as folder:
            for name in names:
                try:
                    shown.append((name, envelope.parse(folder.read(name))))
                except FileNotFoundError:
                    continue
                except (OSError, EnvelopeError) as e:
                    warnings.append(f"set aside unreadable mail {name}: {e}")
                    folder.set_aside(name)
        spool.mark_seen(user, [name for name, _ in shown], HUMANS)
    return shown, warnings
