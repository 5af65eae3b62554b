"""What ``attend permissions`` and ``attend doctor`` check in a host's files: reading a settings file,
finding attend's hook in it, and the checks every host's wiring is made of (its MCP server, a hook
and its script). Read-only; each gap comes with the command that fixes it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attend import safejson
from attend.setup import install as core


@dataclass
class HostCheck:
    name: str
    ok: bool
    detail: str
    fix: str = ""  # the one command that fixes it (a sentence where no command does)


@dataclass
class HostWiring:
    """One other client's configuration: wired means attend wrote into it (its entries or its record)."""

    host: str  # the host's name ("codex", "gemini")
    target: str
    wired: bool
    checks: list[HostCheck]
    ok: bool


def read_json(path: Path, warnings: list[str]) -> dict[str, Any]:
    """A settings file's object ({} when absent); what keeps it from being read goes to ``warnings``."""
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


def hook_groups(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    hooks = settings.get("hooks")
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    return [g for g in groups if isinstance(g, dict)] if isinstance(groups, list) else []


def group_hooks(group: dict[str, Any]) -> list[Any]:
    """A hook group's ``hooks`` list; none when the file holds anything else there (a config file is
    input: a number in place of the list is read as no hooks, never iterated)."""
    hooks = group.get("hooks")
    return hooks if isinstance(hooks, list) else []


def wired(
    target: core.Target, settings: dict[str, Any], event: str, script: str, rewake: bool = False
) -> tuple[bool, str | None]:
    """Whether ``event`` runs attend's ``script`` from ``target`` (and under which matcher)."""
    for group in hook_groups(settings, event):
        for hook in group_hooks(group):
            command = hook.get("command") if isinstance(hook, dict) else None
            if rewake and not (isinstance(hook, dict) and hook.get("asyncRewake") is True):
                continue  # without asyncRewake the client would wait for it at every turn end
            if isinstance(command, str) and target.owns(command) and command.rstrip("'\"").endswith(script):
                matcher = group.get("matcher")
                return True, matcher if isinstance(matcher, str) else None
    return False, None


def server(servers: Any, where: str, fix: str) -> HostCheck:
    """The ``attend`` entry of a host's MCP servers: present, running ``attend mcp`` by an executable."""
    entry = servers.get("attend") if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or "mcp" not in (entry.get("args") or []):
        return HostCheck("MCP server", False, f"no attend MCP server in {where}", fix)
    command = entry.get("command")
    if not isinstance(command, str) or (os.path.isabs(command) and not os.access(command, os.X_OK)):
        return HostCheck("MCP server", False, f"{where} runs {command!r}, which is not an executable", fix)
    return HostCheck("MCP server", True, f"{where} runs {command} mcp")


def hook(target: core.Target, doc: dict[str, Any], event: str, script: str, what: str, fix: str) -> HostCheck:
    """attend's hook for ``event`` in the settings, and its script in place and executable."""
    name = f"{event} hook"
    found, _ = wired(target, doc, event, script)
    if not found:
        return HostCheck(name, False, f"{target.settings} has no {event} hook running {script} ({what})", fix)
    if not os.access(target.hooks_dir / script, os.X_OK):
        return HostCheck(name, False, f"{target.hooks_dir / script} is missing or not executable ({what})", fix)
    return HostCheck(name, True, f"{script}: {what}")
