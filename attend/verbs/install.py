"""install / uninstall: apply attend's baseline to a Claude Code configuration, and withdraw it.

The merge and the file handling live in attend.setup.install; this module is the verb surface.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from attend.setup import install as core
from attend.spool import default_root

DESCRIPTION = (
    "Wire attend into a Claude Code configuration: allow every attend tool, add the Stop-hook drain to "
    "settings.json, register the `attend mcp` server in .claude.json, and copy the hook scripts and the "
    "attend skill. A three-way merge keeps your own settings; running it again changes nothing. "
    "The guard hook is copied but never wired."
)
PARAMS: dict[str, str] = {
    "target": "Claude Code config folder (default: $CLAUDE_CONFIG_DIR, else ~/.claude).",
    "dry_run": "Print the diff and write nothing.",
}
UNINSTALL_DESCRIPTION = (
    "Withdraw exactly what `attend install` wrote. Files nothing else changed since come back byte for "
    "byte; otherwise your current files stay, minus attend's entries. Says where the spool is."
)
UNINSTALL_PARAMS: dict[str, str] = {
    "target": PARAMS["target"],
    "purge": "Also delete the spool (every message and session record).",
}


@dataclass
class Change:
    path: str
    action: str
    diff: str


@dataclass
class Installed:
    target: str
    settings: str
    claude_json: str
    dry_run: bool
    changed: bool
    changes: list[Change]
    backups: list[str]
    guard_wired: bool = False  # install never wires the guard
    warnings: list[str] = field(default_factory=list)


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


def run(target: str | None = None, dry_run: bool = False, env: Mapping[str, str] | None = None) -> Installed:
    env = os.environ if env is None else env
    where = core.resolve_target(target, env)
    out = core.install(where, dry_run=dry_run, attend_exe=core.attend_executable(env))
    warnings = []
    if core.attend_executable(env) == "attend":
        warnings.append("no attend executable found by absolute path; the MCP entry relies on the client's PATH")
    return Installed(
        target=out.target,
        settings=out.settings,
        claude_json=out.claude_json,
        dry_run=dry_run,
        changed=bool(out.changes),
        changes=[Change(c.path, c.action, c.diff) for c in out.changes],
        backups=out.backups,
        warnings=warnings,
    )


def run_uninstall(target: str | None = None, purge: bool = False, env: Mapping[str, str] | None = None) -> Uninstalled:
    env = os.environ if env is None else env
    where = core.resolve_target(target, env)
    out = core.uninstall(where, default_root(dict(env)), purge=purge)
    return Uninstalled(
        target=out.target,
        settings=out.settings,
        claude_json=out.claude_json,
        changes=[Change(c.path, c.action, c.diff) for c in out.changes],
        backups=out.backups,
        spool=out.spool,
        purged=out.purged,
    )
