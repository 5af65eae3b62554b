"""permissions: is this Claude Code configuration wired for attend, and is the outbound gate soft or hard;
and each other client attend wired or found (Codex CLI, Gemini CLI): its MCP server and hooks.

Read-only. An unattended session has no permission prompt, so an attend tool without its allow entry
simply fails there: every entry counts as required, except the outbound ones under a hard gate.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attend import safejson
from attend.domain.context import Context
from attend.setup import hosts as host_setup
from attend.setup import install as core
from attend.setup import safetoml

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
class HostCheck:
    name: str
    ok: bool
    detail: str
    fix: str = ""  # the one command that fixes it (a sentence where no command does)


@dataclass
class HostWiring:
    """One other client's configuration: wired means attend wrote into it (its entries or its record)."""

    host: str  # "codex" | "gemini"
    target: str
    wired: bool
    checks: list[HostCheck]
    ok: bool


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


# ---------------------------------------------------------------------- Codex CLI and Gemini CLI


def other_hosts(env: Mapping[str, str], attend: str = "attend") -> list[HostWiring]:
    """Each of Codex and Gemini whose config folder exists or that attend wired; ``attend`` names the
    running attend in the fixes."""
    out = []
    for host in ("codex", "gemini"):
        p = host_setup.plan(host, env, core.attend_executable(env))
        recorded = (p.target.state_dir / core.STATE_FILE).exists()
        if p.target.dir.is_dir() or recorded:
            out.append(_inspect(p, recorded, attend, env))
    return out


def _server(servers: Any, where: str, fix: str) -> HostCheck:
    entry = servers.get("attend") if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or "mcp" not in (entry.get("args") or []):
        return HostCheck("MCP server", False, f"no attend MCP server in {where}", fix)
    command = entry.get("command")
    if not isinstance(command, str) or (os.path.isabs(command) and not os.access(command, os.X_OK)):
        return HostCheck("MCP server", False, f"{where} runs {command!r}, which is not an executable", fix)
    return HostCheck("MCP server", True, f"{where} runs {command} mcp")


def _hook(target: core.Target, doc: dict[str, Any], event: str, script: str, what: str, fix: str) -> HostCheck:
    name = f"{event} hook"
    wired, _ = _wired(target, doc, event, script)
    if not wired:
        return HostCheck(name, False, f"{target.settings} has no {event} hook running {script} ({what})", fix)
    if not os.access(target.hooks_dir / script, os.X_OK):
        return HostCheck(name, False, f"{target.hooks_dir / script} is missing or not executable ({what})", fix)
    return HostCheck(name, True, f"{script}: {what}")


def _codex_trust(
    target: core.Target, hooks: dict[str, Any], config: dict[str, Any], env: Mapping[str, str], fix: str
) -> HostCheck:
    """Codex skips an untrusted hook silently: each of attend's Stop hooks needs its
    ``hooks.state."<hooks.json>:stop:<group>:<hook>".trusted_hash`` in config.toml (Codex's own key)."""
    keys = [
        f"{target.settings}:stop:{g}:{h}"
        for g, group in enumerate(_hook_groups(hooks, "Stop"))
        for h, hook in enumerate(group.get("hooks") or [])
        if isinstance(hook, dict) and isinstance(hook.get("command"), str) and target.owns(hook["command"])
    ]
    state = config.get("hooks", {}).get("state", {}) if isinstance(config.get("hooks"), dict) else {}
    untrusted = [
        k
        for k in keys
        if not isinstance(state.get(k) if isinstance(state, dict) else None, dict)
        or not isinstance(state[k].get("trusted_hash"), str)
    ]
    if not keys:
        return HostCheck("hook trust", False, "no attend hook to trust (see the Stop hook)", fix)
    if untrusted:
        how = (
            fix
            if host_setup.binary("codex", env)
            else ("put codex on PATH and run " + fix + ", or open codex and trust attend's Stop hook (/hooks)")
        )
        return HostCheck(
            "hook trust", False, f"not trusted in config.toml, so Codex skips it silently: {', '.join(untrusted)}", how
        )
    return HostCheck("hook trust", True, f"trusted in config.toml ({len(keys)} hook{'s' if len(keys) != 1 else ''})")


def _inspect(p: host_setup.Plan, recorded: bool, attend: str, env: Mapping[str, str]) -> HostWiring:
    import tomllib

    target = p.target
    fix = f"{attend} install --host {p.host}"
    checks: list[HostCheck] = []
    warnings: list[str] = []
    doc = _read(target.settings, warnings)
    if warnings:
        checks.append(HostCheck("settings", False, warnings[0], f"repair that file (a JSON object), then run {fix}"))
    if p.host == "codex":
        config: dict[str, Any] = {}
        try:
            config = tomllib.loads(safetoml.read(str(target.claude_json)))
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as e:
            checks.append(
                HostCheck(
                    "config.toml",
                    False,
                    f"cannot read {target.claude_json}: {e}",
                    f"repair that file (valid TOML), then run {fix}",
                )
            )
        checks.append(_server(config.get("mcp_servers"), f"{target.claude_json} [mcp_servers.attend]", fix))
        checks.append(_hook(target, doc, "Stop", host_setup.CODEX_STOP, "the turn-end drain and the idle wake", fix))
        checks.append(_codex_trust(target, doc, config, env, fix))
    else:
        checks.append(_server(doc.get("mcpServers"), f"{target.settings} mcpServers.attend", fix))
        checks.append(
            _hook(
                target, doc, "SessionStart", host_setup.GEMINI_START, "records the session for its gemini process", fix
            )
        )
        checks.append(_hook(target, doc, "AfterAgent", core.DRAIN_SCRIPT, "the turn-end drain", fix))
    wired = recorded or any(c.ok for c in checks if c.name != "hook trust")
    return HostWiring(p.host, str(target.dir), wired, checks, all(c.ok for c in checks))
