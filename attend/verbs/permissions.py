"""permissions: is this Claude Code configuration wired for attend, and is the outbound gate soft or hard.

Read-only. An unattended session has no permission prompt, so an attend tool without its allow entry
simply fails there: every entry counts as required, except the outbound ones under a hard gate.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attend import safejson
from attend.domain.context import Context
from attend.setup import install as core

DESCRIPTION = (
    "Report whether a Claude Code configuration is wired for attend: every attend tool's allow entry, "
    "the Stop-hook drain, the MCP server, the guard hook, and whether the outbound gate is soft or hard. "
    "Exits 1 when something required is missing."
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


def _read(path: Path, warnings: list[str]) -> dict[str, Any]:
    try:
        doc = safejson.loads(path.read_text(encoding="utf-8") or "{}")
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        warnings.append(f"cannot read {path}: {e}")
        return {}
    if not isinstance(doc, dict):
        warnings.append(f"{path} is not a JSON object")
        return {}
    return doc


def _strings(doc: dict[str, Any], *keys: str) -> list[str]:
    value: Any = doc
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _hook_groups(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    hooks = settings.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    return [g for g in groups if isinstance(g, dict)] if isinstance(groups, list) else []


def _wired(
    target: core.Target, settings: dict[str, Any], event: str, script: str, rewake: bool = False
) -> tuple[bool, str | None]:
    for group in _hook_groups(settings, event):
        for hook in group.get("hooks") or []:
            command = hook.get("command") if isinstance(hook, dict) else None
            if rewake and not (isinstance(hook, dict) and hook.get("asyncRewake") is True):
                continue  # without asyncRewake the client would wait for it at every turn end
            if isinstance(command, str) and target.owns(command) and command.rstrip("'\"").endswith(script):
                matcher = group.get("matcher")
                return True, matcher if isinstance(matcher, str) else None
    return False, None


def run(ctx: Context, req: PermissionsRequest) -> Permissions:
    """Reads ``ctx.env`` and Claude Code's files only; never the spool."""
    where = core.resolve_target(req.target, ctx.env)
    warnings: list[str] = []
    settings = _read(where.settings, warnings)
    claude = _read(where.claude_json, warnings)
    allowed = set(_strings(settings, "permissions", "allow"))
    denied = set(_strings(settings, "permissions", "deny"))
    server_wide = bool(allowed & set(SERVER_WIDE))

    baseline = _strings(core.settings_baseline(where), "permissions", "allow")
    allow = {e: (e in allowed or (e.startswith("mcp__attend__") and server_wide)) and e not in denied for e in baseline}
    hard = all(d in denied for d in HARD_GATE_DENY) and not allow.get("mcp__attend__send", False)
    missing = [e for e, present in allow.items() if not present and not (hard and e in OUTBOUND_TOOLS)]

    stop_hook, _ = _wired(where, settings, "Stop", core.DRAIN_SCRIPT)
    waiter, _ = _wired(where, settings, "Stop", core.WAIT_SCRIPT, rewake=True)
    recall, recall_matcher = _wired(where, settings, "SessionStart", core.COMPACT_SCRIPT)
    if recall and recall_matcher != "compact":
        warnings.append(
            f"the compact hook is wired under matcher {recall_matcher!r}; only matcher 'compact' keeps it to "
            "the session start after a compaction (attend install wires it so)"
        )
    guard, matcher = _wired(where, settings, "PreToolUse", core.GUARD_SCRIPT)
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
        ok=not missing and stop_hook and mcp_server,
        warnings=warnings,
    )
