"""uninstall: withdraw what ``attend install`` wrote from a Claude Code configuration.

The file handling lives in attend.setup.install. It never opens the spool (it may be gone, or
refused): it takes the spool's location from ``ctx.spool_root``, and removes it only with ``purge``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.context import Context
from attend.setup import install as core
from attend.verbs.install import PARAMS as INSTALL_PARAMS
from attend.verbs.install import Change

DESCRIPTION = (
    "Withdraw exactly what `attend install` wrote. Files nothing else changed since come back byte for "
    "byte; otherwise your current files stay, minus attend's entries. Says where the spool is."
)
EXAMPLES = (  # the end of `attend uninstall --help` (CLI only)
    ("attend uninstall", "take it out again; your own settings stay"),
    ("attend uninstall --purge", "and remove the spool"),
)
PARAMS: dict[str, str] = {
    "target": INSTALL_PARAMS["target"],
    "purge": "Also delete the spool (every message and session record); only a human may, outside any agent session.",
}


@dataclass(frozen=True)
class UninstallRequest:
    target: str | None = None
    purge: bool = False


@dataclass
class Uninstalled:
    target: str
    settings: str
    claude_json: str
    changes: list[Change]
    backups: list[str]
    spool: str
    purged: bool
    warnings: list[str] = field(default_factory=list)


PURGE_ACTION = "deleting the spool (attend uninstall --purge)"


def run(ctx: Context, req: UninstallRequest) -> Uninstalled:
    if req.purge:
        ctx.human(PURGE_ACTION)  # every session's mail and records: never an agent's call
    where = core.resolve_target(req.target, ctx.env)
    out = core.uninstall(where, ctx.spool_root, purge=req.purge)
    return Uninstalled(
        target=out.target,
        settings=out.settings,
        claude_json=out.claude_json,
        changes=[Change(c.path, c.action, c.diff) for c in out.changes],
        backups=out.backups,
        spool=out.spool,
        purged=out.purged,
    )
