"""The inbound rule's side off the send path: setting a session's rule, its project's default, what
waits in ``held/``, and deciding it (docs/architecture/outcomes.md).

The send path reads the rule in ``attend.domain.core.outcomes`` (standard library only); everything here
runs when a person or a session asks (``attend inbound``, the MCP tool ``inbound``, ``attend chat``).
A decision is one rename under the session's delivery lock (``Spool.decide_held``): held/ -> new/
to accept, so the conduits' one claim shows it exactly once as any delivery, or held/ -> declined/.
The sender reads either in its receipts (``attend inbox --sent``); nothing is mailed back, so a
decline costs the sender no turn.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from attend.domain.core import envelope, outcomes
from attend.domain.core.envelope import EnvelopeError
from attend.errors import AttendError
from attend.layout import HELD, INBOUND, INBOUND_DEFAULT, NAME_RE, SESSIONS, name_time
from attend.record import Record
from attend.spool import Spool

CONFIG_KEYS = {c: f"inbound.{c}" for c in outcomes.CLASSES}  # what a config file (a project's too) may set
SUBJECT = 60  # characters of a waiting message's first line shown


class Waiting(Record):
    """One held delivery: what it is, for whom, and whether it waited past a day unreviewed."""

    id: str
    session: str  # the session it waits for
    sender: str
    from_id: str
    sender_class: str  # local, humans or hosts
    at: float
    subject: str
    unreviewed: bool


def set_rule(spool: Spool, sid: str, classes: tuple[str, ...], rule: str) -> dict[str, str]:
    """Set the session's own rule for ``classes`` (the others keep theirs); the rule in force after."""
    own = outcomes.own_rule(spool, sid)
    mine = dict(own) if own else {}
    mine.update(dict.fromkeys(classes, rule))
    spool.write_state(outcomes.render_rule(mine), SESSIONS, sid, INBOUND, durable=True)
    return outcomes.rule_of(spool, sid)


def write_default(spool: Spool, sid: str, settings: Mapping[str, object]) -> None:
    """Record the project overlay's default for the session (at enrollment; the send path reads no
    yaml): ``settings`` is the loaded config's values. Only what differs from accept is written."""
    default = {c: str(settings.get(k)) for c, k in CONFIG_KEYS.items() if settings.get(k) in outcomes.RULES}
    if any(v != outcomes.ACCEPT for v in default.values()):
        spool.write_state(outcomes.render_rule(default), SESSIONS, sid, INBOUND_DEFAULT)
    else:
        spool.remove(SESSIONS, sid, INBOUND_DEFAULT)


def waiting(spool: Spool, sid: str, now: float | None = None) -> list[Waiting]:
    """What waits in the session's held/, oldest first; past a day it is marked unreviewed (and stays)."""
    now = time.time() if now is None else now
    out = []
    for name in spool.listing(sid, HELD):
        if not NAME_RE.fullmatch(name):
            continue
        try:
            sig = envelope.parse(spool.read(SESSIONS, sid, HELD, name, limit=1 << 17))
        except (OSError, AttendError, EnvelopeError):
            continue
        line = sig.body.strip().split("\n", 1)[0][:SUBJECT]
        at = name_time(name)
        out.append(
            Waiting(
                name,
                sid,
                sig.sender,
                sig.from_id,
                outcomes.sender_class(sig.from_kind, sig.from_id, sig.via),
                at,
                line,
                now - at > outcomes.UNREVIEWED_AFTER,
            )
        )
    return out


def holders(spool: Spool, name: str) -> list[str]:
    """Every session for which the message ``name`` waits (a channel's message may wait for several)."""
    return [sid for sid in spool.names(SESSIONS) if spool.delivery_state(sid, name) == "held"]


def decide(spool: Spool, sid: str, name: str, accept: bool) -> bool:
    """Accept (into new/: the next conduit shows it once) or decline one held delivery; False when it
    no longer waits (decided already)."""
    try:
        return spool.decide_held(sid, name, accept)
    except FileNotFoundError:
        return False


def note_default(spool: Spool, sid: str, origin: str, env: Mapping[str, str] | None = None) -> None:
    """Read the project's (and the user's) ``inbound.*`` settings and record them for the session, as it
    enrolls; best effort (a config that cannot be read leaves the default as it was)."""
    from attend.domain.settings import config

    try:
        cfg = config.load(env, origin)
        spool.make_maildir(sid)
        write_default(spool, sid, cfg.values)
    except (OSError, AttendError) as e:
        spool.log(f"inbound: the project default for {sid} was not recorded: {e}")
