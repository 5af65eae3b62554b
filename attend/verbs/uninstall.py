"""uninstall: withdraw what ``attend install`` wrote from a Claude Code configuration.

The file handling lives in attend.setup.install. It never opens the spool (it may be gone, or
refused): it takes the spool's location from ``ctx.spool_root``, and removes it only with ``purge``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.context import Context
from attend.setup import install as core
from attend.verbs.install import PARAMS as INSTALL_PARAMS
from attend.verbs.install import Change, HostWired, chosen_hosts

DESCRIPTION = (
    "Withdraw exactly what `attend install` wrote. Files nothing else changed since come back byte for "
    "byte; otherwise your current files stay, minus attend's entries. Says where the spool is."
)
EXAMPLES = (  # the end of `attend uninstall --help` (CLI only)
    ("attend uninstall", "take it out again; your own settings stay"),
    ("attend uninstall --purge", "and remove the spool, after a [y/N] on a terminal"),
    ("attend uninstall --purge --yes", "the same without asking (a script)"),
)
PARAMS: dict[str, str] = {
    "target": INSTALL_PARAMS["target"],
    "purge": "Also delete the spool (every message and session record); only a human may, outside any agent session.",
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


def run(ctx: Context, req: UninstallRequest) -> Uninstalled:
    from attend.setup import hosts

    if req.purge:
        ctx.human(PURGE_ACTION)  # every session's mail and records: never an agent's call

    wired = chosen_hosts(ctx, req.target, req.hosts)
    result = Uninstalled("", "", "", [], [], str(ctx.spool_root), False, hosts=wired)
    if "claude" in wired:
        where = core.resolve_target(req.target, ctx.env)
        out = core.uninstall(where, ctx.spool_root, purge=False)
        result.target, result.settings, result.claude_json = out.target, out.settings, out.claude_json
        result.changes = [Change(c.path, c.action, c.diff) for c in out.changes]
        result.backups = out.backups
    for name in wired:
        if name == "claude":
            continue
        plan = hosts.plan(name, ctx.env, core.attend_executable(ctx.env))
        done = hosts.uninstall(plan)
        changes = [Change(c.path, c.action, c.diff) for c in done.changes]
        result.others.append(HostWired(name, done.target, bool(changes), changes, done.backups))
    if req.purge:
        result.purged = core.purge_spool(ctx.spool_root)
    return result
