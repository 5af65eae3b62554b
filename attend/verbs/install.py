"""install: apply attend's baseline to a Claude Code configuration (``uninstall`` withdraws it).

The merge and the file handling live in attend.setup.install; this module is the verb surface.
It runs before any spool exists, and never opens one: it reads ``ctx.env`` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.sessions.context import Context
from attend.setup import install as core

TYPE_CHECKING = False
if TYPE_CHECKING:
    from attend.setup.adapter import HostSetup

DESCRIPTION = (
    "Wire attend into Claude Code, Codex CLI and Gemini CLI: the `attend mcp` server, the turn-end "
    "drain hook, the hook scripts and the attend skill (for Claude Code also the allow entries). With no "
    "--host it wires each client it finds and says which. A three-way merge keeps your own settings; "
    "running it again changes nothing. Codex runs only trusted hooks: install asks Codex to trust "
    "attend's. The guard hook is copied but never wired."
)
EXAMPLES = (  # the end of `attend install --help` (CLI only)
    ("attend install --dry-run", "what it would change"),
    ("attend install", "wire attend into ~/.claude"),
    ("attend install --target ./.claude", "into this project: .claude/settings.json and .mcp.json"),
    ("attend install --host codex", "into Codex CLI only ($CODEX_HOME, else ~/.codex)"),
)
PARAMS: dict[str, str] = {
    "target": (
        "Claude Code config folder (default: $CLAUDE_CONFIG_DIR, else ~/.claude); a project's .claude "
        "folder gets its MCP server in the project's .mcp.json."
    ),
    "dry_run": "Print the diff and write nothing.",
    "hosts": "Client to wire: claude, codex or gemini (repeatable; default: each one found).",
}


@dataclass(frozen=True)
class InstallRequest:
    target: str | None = None
    dry_run: bool = False
    hosts: tuple[str, ...] = ()


@dataclass
class Change:
    path: str
    action: str
    diff: str


@dataclass
class HostWired:
    """One client besides the primary one (Codex, Gemini): what install changed there, and what it did
    that is not a file change (Codex's hook trust)."""

    host: str
    target: str
    changed: bool
    changes: list[Change]
    backups: list[str]
    notes: list[str] = field(default_factory=list)


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
    hosts: list[str] = field(default_factory=list)  # the clients wired, in order ("claude", "codex", "gemini")
    others: list[HostWired] = field(default_factory=list)  # Codex and Gemini, when wired
    notes: list[str] = field(default_factory=list)  # what install says of the primary target (a project's)


def chosen_hosts(ctx: Context, target: str | None, named: tuple[str, ...]) -> list[str]:
    """The clients to wire: those named; else with --target, the host whose folder it names (Claude
    Code); else each one found (Claude Code when none is, so its own refusal says what to do)."""
    from attend.errors import UsageError
    from attend.setup import hosts

    for name in named:
        if hosts.by_name(name) is None:
            raise UsageError(f"unknown host {name!r}; the hosts are {', '.join(hosts.NAMES)}")
    if named:
        return list(dict.fromkeys(named))
    if target is not None:
        return [hosts.PRIMARY.name]
    return hosts.detected(ctx.env) or [hosts.PRIMARY.name]


def wired_hosts(ctx: Context, target: str | None, named: tuple[str, ...]) -> list[str]:
    """The clients to withdraw from: as install chooses them, except that with none found there is
    none to withdraw from (a purge still runs; a Codex-only user has no ~/.claude to refuse)."""
    from attend.setup import hosts

    if named or target is not None:
        return chosen_hosts(ctx, target, named)
    return hosts.detected(ctx.env)


def adapters(wired: list[str]) -> list[HostSetup]:
    """The setup adapters of the hosts chosen, the primary one (Claude Code's, install's own target) first."""
    from attend.setup import hosts

    chosen = [a for a in map(hosts.by_name, wired) if a is not None]
    return sorted(chosen, key=lambda a: not a.primary)


def run(ctx: Context, req: InstallRequest) -> Installed:
    env, dry_run = ctx.env, req.dry_run
    wired = chosen_hosts(ctx, req.target, req.hosts)
    attend_exe = core.attend_executable(env)
    result = Installed("", "", "", dry_run, False, [], [], hosts=wired)
    for adapter in adapters(wired):
        done = adapter.install(env, attend_exe, dry_run, req.target)
        out = done.outcome
        changes = [Change(c.path, c.action, c.diff) for c in out.changes]
        if adapter.primary:
            result.target, result.settings, result.claude_json = out.target, out.settings, out.claude_json
            result.changes, result.backups = changes, out.backups
            result.notes = done.notes
        else:
            result.others.append(HostWired(adapter.name, out.target, bool(changes), changes, out.backups, done.notes))
    result.changed = bool(result.changes) or any(o.changed for o in result.others)
    if attend_exe == "attend" and not result.notes:
        result.warnings.append("no attend executable found by absolute path; the MCP entry relies on the client's PATH")
    return result
