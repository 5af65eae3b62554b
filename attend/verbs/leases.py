"""leases: who holds what (docs/architecture/leases.md): every live session's leases on files, with
the holder's name and client, the glob and its root, the reason, since, until, and the host; with a
relay, other hosts' too (their name@host, and the repository each is keyed by)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from attend.domain.messages import remote
from attend.domain.sessions.context import Context
from attend.layout import host, iso
from attend.leases.store import live_holdings

DESCRIPTION = "List the leases live sessions hold on files: holder, globs, reason, since."
PARAMS: dict[str, str] = {}
EXAMPLES = (  # the end of `attend leases --help` (CLI only)
    ("attend leases", "who holds what"),
    ("attend leases --json", "the same as JSON"),
)


@dataclass(frozen=True)
class LeasesRequest:
    pass


@dataclass
class HeldLease:
    holder: str  # the holder's name as shown
    session: str  # its id
    client: str | None
    glob: str
    root: str
    reason: str
    shared: bool
    since: str
    until: str | None
    host: str  # the machine it is held on (docs/architecture/leases.md, "Across hosts")
    repo: str | None = None  # another host's: the repository it is keyed by (its root is that host's)


@dataclass
class Leases:
    leases: list[HeldLease]
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: LeasesRequest) -> Leases:
    here = host()
    rows = [
        HeldLease(
            h.name,
            h.sid,
            h.client,
            x.glob,
            x.root,
            x.reason,
            x.shared,
            iso(x.since),
            iso(x.until) if x.until else None,
            here,
        )
        for h in live_holdings(ctx.spool, time.time())
        for x in h.leases
    ]
    rows += [  # other hosts' leases, as the relay mirrors them (nothing without a relay)
        HeldLease(x.address, x.id, x.client or None, x.glob, "", x.reason, x.shared, iso(x.since), None, x.host, x.repo)
        for x in remote.leases(ctx.spool)
    ]
    rows.sort(key=lambda r: (r.host != here, r.repo or r.root, r.glob, r.holder))
    return Leases(rows)
