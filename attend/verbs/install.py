"""install: apply attend's baseline to a Claude Code configuration (``uninstall`` withdraws it).

The merge and the file handling live in attend.setup.install; this module is the verb surface.
It runs before any spool exists, and never opens one: it reads ``ctx.env`` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.context import Context
from attend.setup import install as core

DESCRIPTION = (
    "Wire attend into a Claude Code configuration: allow every attend tool, add the Stop-hook drain to "
    "settings.json, register the `attend mcp` server in .claude.json, and copy the hook scripts and the "
    "attend skill. A three-way merge keeps your own settings; running it again changes nothing. "
    "The guard hook is copied but never wired."
)
EXAMPLES = (  # the end of `attend install --help` (CLI only)
    ("attend install --dry-run", "what it would change"),
    ("attend install", "wire attend into ~/.claude"),
    ("attend install --target ./.claude", "into a project's settings"),
)
PARAMS: dict[str, str] = {
    "target": "Claude Code config folder (default: $CLAUDE_CONFIG_DIR, else ~/.claude).",
    "dry_run": "Print the diff and write nothing.",
}


@dataclass(frozen=True)
class InstallRequest:
    target: str | None = None
    dry_run: bool = False


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


def run(ctx: Context, req: InstallRequest) -> Installed:
    env, dry_run = ctx.env, req.dry_run
    where = core.resolve_target(req.target, env)
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
