"""send: publish a message to #open, a channel, a project, or chosen sessions."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.core import outcomes
from attend.domain.messages import outbound
from attend.domain.sessions.context import Context

DESCRIPTION = "Send a message; it starts a topic (answer one with reply). Default scope: #open, everyone."
PARAMS = {
    "message": "The text (UTF-8, at most 64 KiB).",
    "to": (
        "Recipients: '*', '#channel', a project path, or comma-separated session ids, display names or "
        "human user names."
    ),
    "channel": "The same as to='#channel'.",
    "broadcast": "The same as to='*'.",
    "re": "Thread under this message id.",
    "on_behalf_of": "Whom you act for (an id or name), recorded in the envelope.",
}
EXAMPLES = (  # the end of `attend send --help` (CLI only)
    ('attend send "freeze main at 5pm"', "to #open, everyone"),
    ('attend send --to proj-8d "a word?"', "to one session, by its name (as peers shows it)"),
    ('attend send --to user:dana "lunch?"', "to a human (user: when a session is named alike)"),
    ("git log -1 | attend send --to ~/src/api", "the body from stdin, to every session of a project"),
)


@dataclass(frozen=True)
class SendRequest:
    message: str
    to: str | None = None
    channel: str | None = None
    broadcast: bool = False
    re: str | None = None
    on_behalf_of: str | None = None


@dataclass
class Recipient:
    """What became of a message for one recipient, decided when it was written."""

    name: str  # as attend names it (peers), or a human's user name, or name@host
    id: str  # a session id, a human's user name, or id@host
    kind: str  # "agent" or "human"
    outcome: str  # delivered | parked | held | refused | muted | throttled (attend.domain.core.outcomes)


@dataclass
class Sent:
    id: str
    room: str
    scope: str
    to: str  # the To header: session ids, a human's user name, #channel, a project path or *
    re: str | None
    from_kind: str
    from_id: str
    delivered: int  # recipients linked: live + parked
    live: int  # of them, live now (peers lists them): a session per the liveness policy, a human active recently
    parked: int  # enrolled (or a human's mailbox) but not live: it keeps the message until it is back
    warnings: list[str] = field(default_factory=list)
    humans: list[str] = field(default_factory=list)  # the names in ``to`` that resolved to a human, not a session
    to_name: str = ""  # the recipients as attend names them: a session by its name, not its id
    recipients: list[Recipient] = field(default_factory=list)  # per recipient, its outcome


@dataclass
class SentBrief:
    """A sent message as a model is told of it (the MCP tools send and reply): at most 200 bytes for
    up to three recipients. ``attend send --json`` has the whole ``Sent``."""

    id: str
    room: str
    re: str | None
    outcome: str  # "Tao delivered, Uma held", or counts by outcome past three recipients
    warnings: list[str] = field(default_factory=list)


def brief(result: Sent) -> SentBrief:
    rows = [(r.name, r.id, r.kind, r.outcome) for r in result.recipients]
    return SentBrief(result.id, result.room, result.re, outcomes.brief(rows), result.warnings)


def sent(outcome: outbound.Outcome) -> Sent:
    """The verb's result for a delivered message (`reply` returns the same)."""
    sig = outcome.sig
    return Sent(
        sig.id,
        sig.room,
        outcome.scope,
        sig.to,
        sig.re,
        sig.from_kind,
        sig.from_id,
        outcome.delivered,
        outcome.live,
        outcome.delivered - outcome.live,
        outcome.warnings,
        list(outcome.humans),
        outcome.to_name,
        [Recipient(*row) for row in outcome.recipients],
    )


def run(ctx: Context, req: SendRequest) -> Sent:
    return sent(outbound.send(ctx, req.message, req.to, req.channel, req.broadcast, req.re, req.on_behalf_of))
