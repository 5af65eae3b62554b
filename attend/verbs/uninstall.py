"""uninstall: withdraw what ``attend install`` wrote from a Claude Code configuration.

The file handling lives in attend.setup.install. It never opens the spool (it may be gone, or
refused): it takes the spool's location from ``ctx.spool_root``, and removes it only with ``purge``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.sessions.context import Context
from attend.setup import install as core
from attend.verbs.install import PARAMS as INSTALL_PARAMS
from attend.verbs.install import Change, HostWired, adapters, wired_hosts

DESCRIPTION = (
    "Withdraw exactly what `attend install` wrote. Files nothing else changed since come back byte for "
    "byte; otherwise your current files stay, minus attend's entries. Says where the spool is."
)
EXAMPLES = (  # the end of `attend uninstall --help` (CLI only)
    ("attend uninstall", "take it out again; your own settings stay"),
    ("attend uninstall --purge", "and remove the spool, after a [y/N] typed at your terminal"),
)
PARAMS: dict[str, str] = {
    "target": INSTALL_PARAMS["target"],
    "purge": (
        "Also delete the spool (every message and session record); only a human may, at a terminal, "
        "outside any agent session."
    ),
    "hosts": "Client to withdraw from: claude, codex or gemini (repeatable; default: each one found).",
}


@dataclass(frozen=True)
class UninstallRequest:
    target: str | None = None
    purge: bool = False
    hosts: tuple[str, ...] = ()


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
    hosts: list[str] = field(default_factory=list)
    others: list[HostWired] = field(default_factory=list)


PURGE_ACTION = "deleting the spool (attend uninstall --purge)"


def purge_question(ctx: Context) -> str:
    return f"Delete the spool {ctx.spool_root}: every message and session record?"


def run(ctx: Context, req: UninstallRequest) -> Uninstalled:
    if req.purge:  # every session's mail and records: a human's call, confirmed at the terminal
        ctx.human(PURGE_ACTION, purge_question(ctx))

    wired = wired_hosts(ctx, req.target, req.hosts)
    result = Uninstalled("", "", "", [], [], str(ctx.spool_root), False, hosts=wired)
    for adapter in adapters(wired):
        out = adapter.uninstall(ctx.env, core.attend_executable(ctx.env), req.target, ctx.spool_root).outcome
        changes = [Change(c.path, c.action, c.diff) for c in out.changes]
        if adapter.primary:
            result.target, result.settings, result.claude_json = out.target, out.settings, out.claude_json
            result.changes, result.backups = changes, out.backups
        else:
            result.others.append(HostWired(adapter.name, out.target, bool(changes), changes, out.backups))
    if req.purge:
        result.purged = core.purge_spool(ctx.spool_root)
    return result
