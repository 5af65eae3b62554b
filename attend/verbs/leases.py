"""leases: who holds what (docs/architecture/leases.md): every live session's leases on files, with
the holder's name and client, the glob and its root, the reason, since, until, and the host."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from attend.domain.context import Context
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
    host: str  # the machine: leases are local to it (docs/architecture/leases.md, "Across hosts")


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
    rows.sort(key=lambda r: (r.root, r.glob, r.holder))
    return Leases(rows)
