"""permissions: is this Claude Code configuration wired for attend, and is the outbound gate soft or hard;
and each other client attend wired or found (Codex CLI, Gemini CLI): its MCP server and hooks.

Read-only. An unattended session has no permission prompt, so an attend tool without its allow entry
simply fails there: every entry counts as required, except the outbound ones under a hard gate.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from attend.domain.sessions.context import Context
from attend.setup import install as core
from attend.setup.checks import HostCheck as HostCheck
from attend.setup.checks import HostWiring as HostWiring
from attend.setup.checks import read_json, wired

DESCRIPTION = (
    "Report whether a Claude Code configuration is wired for attend: every attend tool's allow entry, "
    "the Stop-hook drain, the MCP server, the guard hook, and whether the outbound gate is soft or hard; "
    "then each Codex CLI or Gemini CLI configuration attend wired or found: its MCP server, its hooks and "
    "(Codex) their trust, with the command that fixes each gap. Exits 1 when something required is missing."
)
EXAMPLES = (  # the end of `attend permissions --help` (CLI only)
    ("attend permissions", "whether the tools and hooks are allowed"),
    ("attend permissions --json", "the same, for a script"),
)
PARAMS: dict[str, str] = {"target": "Claude Code config folder (default: $CLAUDE_CONFIG_DIR, else ~/.claude)."}

HARD_GATE_DENY = ("Bash(attend send*)", "Bash(attend reply*)")
OUTBOUND_TOOLS = ("mcp__attend__send", "mcp__attend__reply")
SERVER_WIDE = ("mcp__attend", "mcp__attend__*")


@dataclass(frozen=True)
class PermissionsRequest:
    target: str | None = None


@dataclass
class Permissions:
    target: str
    settings: str
    claude_json: str
    allow: dict[str, bool]  # each baseline allow entry: effective (allowed and not denied)
    missing: list[str]  # required and not effective
    stop_hook: bool
    waiter: bool  # the waiting conduit: an asyncRewake Stop hook running attend-wait-stop.sh
    recall: bool  # the SessionStart hook (matcher compact) that re-presents after a compaction
    mcp_server: bool
    mcp_command: str | None
    guard: bool
    guard_matcher: str | None
    gate: str  # "soft" | "hard"
    ok: bool
    warnings: list[str] = field(default_factory=list)
    hosts: list[HostWiring] = field(default_factory=list)
    # False: no --target, no Claude Code folder, and another client found: a user of that client alone,
    # whose report is the other clients' (the fields above describe the folder's absence).
    primary: bool = True


def _strings(doc: dict[str, Any], *keys: str) -> list[str]:
    value: Any = doc
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def run(ctx: Context, req: PermissionsRequest) -> Permissions:
    """Reads ``ctx.env`` and Claude Code's files only; never the spool."""
    if req.target is None and not os.path.isdir(core.requested_folder(None, ctx.env)):
        hosts = other_hosts(ctx.env)
        if hosts:  # no primary folder, another client's: that client's user is served on its own
            return absent_primary(ctx.env, hosts)
    where = core.resolve_target(req.target, ctx.env)
    warnings: list[str] = []
    settings = read_json(where.settings, warnings)
    claude = read_json(where.claude_json, warnings)
    allowed = set(_strings(settings, "permissions", "allow"))
    denied = set(_strings(settings, "permissions", "deny"))
    server_wide = bool(allowed & set(SERVER_WIDE))

    baseline = _strings(core.settings_baseline(where), "permissions", "allow")
    allow = {e: (e in allowed or (e.startswith("mcp__attend__") and server_wide)) and e not in denied for e in baseline}
    hard = all(d in denied for d in HARD_GATE_DENY) and not allow.get("mcp__attend__send", False)
    missing = [e for e, present in allow.items() if not present and not (hard and e in OUTBOUND_TOOLS)]

    stop_hook, _ = wired(where, settings, "Stop", core.DRAIN_SCRIPT)
    waiter, _ = wired(where, settings, "Stop", core.WAIT_SCRIPT, rewake=True)
    recall, recall_matcher = wired(where, settings, "SessionStart", core.COMPACT_SCRIPT)
    if recall and recall_matcher != "compact":
        warnings.append(
            f"the compact hook is wired under matcher {recall_matcher!r}; only matcher 'compact' keeps it to "
            "the session start after a compaction (attend install wires it so)"
        )
    guard, matcher = wired(where, settings, "PreToolUse", core.GUARD_SCRIPT)
    if guard and matcher not in ("*", None, ""):
        warnings.append(
            f"the guard is wired under matcher {matcher!r}; only matcher '*' lets it tell a Monitor launch "
            "of `attend run` from a Bash one (see docs/install.md)"
        )
    servers = claude.get("mcpServers")
    entry = servers.get("attend") if isinstance(servers, dict) else None
    mcp_server = isinstance(entry, dict) and "mcp" in (entry.get("args") or [])
    mcp_command = entry.get("command") if isinstance(entry, dict) else None
    if isinstance(mcp_command, str) and os.path.isabs(mcp_command) and not os.access(mcp_command, os.X_OK):
        warnings.append(f"the MCP server command {mcp_command} is not an executable; run `attend install` again")
        mcp_server = False
    hosts = other_hosts(ctx.env)
    return Permissions(
        target=str(where.dir),
        settings=str(where.settings),
        claude_json=str(where.claude_json),
        allow=allow,
        missing=missing,
        stop_hook=stop_hook,
        waiter=waiter,
        recall=recall,
        mcp_server=mcp_server,
        mcp_command=mcp_command if isinstance(mcp_command, str) else None,
        guard=guard,
        guard_matcher=matcher,
        gate="hard" if hard else "soft",
        ok=not missing and stop_hook and mcp_server and all(h.ok for h in hosts if h.wired),
        warnings=warnings,
        hosts=hosts,
    )


def absent_primary(env: Mapping[str, str], hosts: list[HostWiring]) -> Permissions:
    """The report of a user without the primary client's folder: the other clients' checks decide."""
    folder = core.requested_folder(None, env)
    return Permissions(
        target=folder,
        settings="",
        claude_json="",
        allow={},
        missing=[],
        stop_hook=False,
        waiter=False,
        recall=False,
        mcp_server=False,
        mcp_command=None,
        guard=False,
        guard_matcher=None,
        gate="soft",
        ok=all(h.ok for h in hosts if h.wired),
        hosts=hosts,
        primary=False,
    )


# ---------------------------------------------------------------------- the other hosts


def other_hosts(env: Mapping[str, str], attend: str = "attend") -> list[HostWiring]:
    """Each host besides the primary one whose config folder exists or that attend wired, as its setup
    adapter checks it (attend/setup/<host>.py); ``attend`` names the running attend in the fixes."""
    from attend.setup import hosts

    return [wiring for adapter in hosts.ADAPTERS if (wiring := adapter.inspect(env, attend)) is not None]
