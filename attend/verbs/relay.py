"""relay: ``attend relay``, this host's link to other hosts through a NATS JetStream server
(docs/architecture/relay.md). The daemon and the check live in attend.relay, imported only here and
only when called: with no relay configured nothing of it is loaded."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from attend import layout
from attend.domain.messages import remote
from attend.domain.sessions.context import Context
from attend.errors import AttendError, UsageError
from attend.layout import HOST_RE, OUTBOX, RELAY, RELAY_ON
from attend.verbs import FRONTEND

DESCRIPTION = (
    "Run this host's relay to other hosts' attend through a NATS JetStream server (config relay.servers); "
    "one per host, in the foreground. --check says what is wrong, one line each; --provision makes the "
    "stream, the hosts' consumers and the presence bucket (with an admin's credentials); --off stops "
    "queueing sends for other hosts."
)
EXAMPLES = (  # the end of `attend relay --help` (CLI only)
    ("attend relay", "carry messages between this host and the others (run it under a supervisor)"),
    ("attend relay --check", "config, server version, permissions, stream and consumers"),
    ("attend relay --provision laptop,devbox", "an admin: the stream, each host's consumers, the presence bucket"),
)
PARAMS = {
    "check": "Check config, server, permissions, stream and consumers; print one line per problem.",
    "provision": "Comma-separated host names: make the stream, their consumers and the presence bucket.",
    "replicas": "With --provision: stream replicas (3 on a three-node cluster).",
    "off": "Stop queueing sends for other hosts on this spool (until attend relay runs again).",
}


@dataclass(frozen=True)
class RelayRequest:
    check: bool = False
    provision: str | None = None
    replicas: int = 1
    off: bool = False
    warn: Callable[[str], None] | None = field(default=None, metadata=FRONTEND)


@dataclass
class RelayReport:
    host: str
    problems: list[str]
    notes: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    queued: int = 0  # records waiting in the outbox
    ok: bool = True
    code: int = 0  # the daemon's exit code when it ran


EXTRA = "attend relay needs the relay extra: pip install '.[relay]'"


class RelayExtraMissing(AttendError):
    """The relay's own packages are not installed: one line, exit 1."""


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def run(ctx: Context, req: RelayRequest) -> RelayReport:
    from attend.relay import settings

    spool = ctx.spool
    if req.off:
        spool.remove(RELAY, RELAY_ON)
        queued = len(spool.names(RELAY, OUTBOX, "new"))
        return RelayReport("", [], notes=[f"sends for other hosts are no longer queued; {queued} left in the outbox"])
    if req.provision is None and not settings.has_client():
        raise RelayExtraMissing(EXTRA)
    given, owned = layout.host(), remote.spool_host(spool)
    if owned is not None and owned != given:
        # The host name is the spool's once a relay has run: records already queued carry it.
        remote.adopt(spool)
        if not req.check:
            (req.warn or _stderr)(
                f"attend relay: this spool's host is {owned} (its relay has run under that name), not {given} as "
                f"this environment says; it relays as {owned} (attend relay --off, then attend relay, renames it)"
            )
    s = settings.load(ctx.env)
    if s is None:
        raise UsageError(
            "no relay configured: add relay: {servers: [tls://host:4222], ...} to config.yaml (attend config path)"
        )
    queued = len(spool.names(RELAY, OUTBOX, "new"))
    if not s.problems:  # a missing module or unreadable credentials: refused now, not retried for ever
        s.problems.extend(settings.unusable(s))
    if req.provision is not None:
        hosts = [h.strip() for h in req.provision.split(",") if h.strip()]
        bad = [h for h in hosts if not HOST_RE.fullmatch(h) or h == "all"]
        if not hosts or bad:
            raise UsageError(
                f"--provision takes host names (letters, digits, '-'), comma-separated; not {bad or hosts}"
            )
        if s.problems:
            return RelayReport(s.host, s.problems, ok=False)
        from attend.relay import check

        try:
            done = check.provision(s, hosts, req.replicas)
        except Exception as e:
            raise AttendError(f"provisioning failed: {e.__class__.__name__} {e}") from e
        return RelayReport(s.host, [], done=done)
    if req.check:
        from attend.relay import check

        problems, notes = check.check(s)
        aside, newest = remote.aside_summary(spool)
        if aside:
            notes.append(f"{aside} record(s) set aside in relay/outbox/aside/, never published (newest: {newest})")
        return RelayReport(s.host, problems, notes, queued=queued, ok=not problems)
    if s.problems:
        return RelayReport(s.host, s.problems, ok=False, code=2)
    from attend.relay import daemon

    code = daemon.run(spool, s, str(ctx.sessions_dir), req.warn or _stderr)
    return RelayReport(s.host, [], queued=len(spool.names(RELAY, OUTBOX, "new")), ok=code == 0, code=code)
