"""Codex CLI's setup adapter (``$CODEX_HOME``, else ``~/.codex``).

- ``hooks.json`` gets the Stop hook (``attend-codex-stop.sh``: the drain, then the waiter that wakes
  an idle thread with ``codex queue``); ``config.toml`` gets ``[mcp_servers.attend]``, edited with
  tomlkit so the user's comments and order stay.
- Codex runs a hook only once it is trusted, and skips an untrusted one silently, so install asks
  Codex itself to trust attend's hooks: ``codex app-server`` over stdio, ``hooks/list`` for the hash
  of each of attend's hooks, then ``config/value/write`` of ``hooks.state."<key>".trusted_hash``
  (Codex writes that table into config.toml). The hash covers the command, so a changed command is
  trusted again. Without a codex binary on PATH the output says the hooks are not trusted yet, and
  how to trust them. Uninstall removes the trust entries it recorded, and ``[mcp_servers.attend]``.
- ``permissions`` and ``doctor`` check the MCP server in config.toml, the Stop hook and its script,
  and a recorded trust for each of attend's Stop hooks.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attend import safejson
from attend.hosts.codex import HOST, codex_home
from attend.setup import install as core
from attend.setup import plan as planned
from attend.setup import safetoml
from attend.setup.adapter import PlanSetup
from attend.setup.checks import HostCheck, group_hooks, hook, hook_groups, server

CODEX_STOP = "attend-codex-stop.sh"
CODEX_BIN = "codex"  # the client's program, on PATH
TRUST_TIMEOUT = 30.0  # seconds for Codex's app-server to list and trust the hooks
TRUST_CHECK = "hook trust"


class CodexSetup(PlanSetup):
    name = HOST.name
    derived_checks = (TRUST_CHECK,)

    def folder(self, env: Mapping[str, str]) -> Path:
        return Path(codex_home(env))

    def plan(self, env: Mapping[str, str], attend_exe: str) -> planned.Plan:
        target = planned.target_for(self.name, self.folder(env), "hooks.json", "config.toml", env)
        ours = planned.fragment("codex-hooks.json", target, attend_exe, (CODEX_STOP, core.EDIT_SCRIPT))
        # The tools run without asking, as Claude Code's allow entries let them (attend's own rule
        # decides who may act; a sandboxed Codex would otherwise refuse every call under "never").
        table: dict[str, Any] = {"command": attend_exe, "args": ["mcp"], "default_tools_approval_mode": "approve"}
        # Codex starts MCP servers with a filtered environment: pass where the spool is.
        passed = {k: env[k] for k in ("ATTEND_HOME", "XDG_CACHE_HOME") if env.get(k)}
        if passed:
            table["env"] = passed
        copies = [
            planned.hook_copy(target, CODEX_STOP),
            planned.hook_copy(target, core.EDIT_SCRIPT),
            planned.skill_copy(target),
        ]
        return planned.Plan(
            self.name,
            target,
            ours,
            copies,
            CodexConfig(table),
            dry_run_notes=(
                "would ask Codex to trust attend's Stop hook (codex app-server: hooks/list, config/value/write)",
            ),
            after=trust_after_install,
        )

    def checks(self, p: planned.Plan, doc: dict[str, Any], env: Mapping[str, str], fix: str) -> list[HostCheck]:
        import tomllib

        target = p.target
        checks: list[HostCheck] = []
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
        checks.append(server(config.get("mcp_servers"), f"{target.claude_json} [mcp_servers.attend]", fix))
        checks.append(hook(target, doc, "Stop", CODEX_STOP, "the turn-end drain and the idle wake", fix))
        checks.append(trust_check(target, doc, config, env, fix))
        return checks


SETUP = CodexSetup()


# ---------------------------------------------------------------------- config.toml


class CodexConfig:
    """attend's part of Codex's config.toml: ``[mcp_servers.attend]``, and the trust entries of
    attend's hooks (``hooks.state."<key>"``), which Codex wrote at install's request."""

    tables = (("mcp_servers",), ("mcp_servers", "attend"), ("hooks",), ("hooks", "state"))

    def __init__(self, table: dict[str, Any]) -> None:
        self.table = table

    def with_ours(self, doc: Any) -> Any:
        return toml_with(doc, self.table, [])

    def without_ours(self, doc: Any, state: core.State) -> Any:
        trusted = list(state.data.get("codex_trusted", [])) if state.exists else []
        return toml_with(doc, None, trusted)


def toml_with(doc: Any, table: dict[str, Any] | None, trusted: list[str]) -> Any:
    """A copy of ``doc`` with ``[mcp_servers.attend]`` set to ``table`` (removed when None), and the
    trust entries attend recorded (``hooks.state."<key>"``) removed when ``table`` is None."""
    import tomlkit

    out = tomlkit.parse(tomlkit.dumps(doc))
    servers = out.get("mcp_servers")
    if table is not None:
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            out["mcp_servers"] = servers
        inline = isinstance(servers, tomlkit.items.InlineTable)  # mcp_servers = { … }: ours inline too
        fresh: Any = tomlkit.inline_table() if inline else tomlkit.table()
        for k, v in table.items():
            fresh[k] = tomlkit.inline_table() if isinstance(v, dict) else v
            if isinstance(v, dict):
                fresh[k].update(v)
        if not inline:
            fresh.add(tomlkit.nl())  # a blank line before whatever table follows, as a person writes it
        servers["attend"] = fresh
        return out
    if servers is not None and "attend" in servers:
        del servers["attend"]
        if not servers:
            del out["mcp_servers"]
    hooks = out.get("hooks")
    state = hooks.get("state") if hooks is not None else None
    if hooks is not None and state is not None:
        for key in trusted:
            if key in state:
                del state[key]
        if not state:
            del hooks["state"]
        if not hooks:
            del out["hooks"]
    return out


# ---------------------------------------------------------------------- the hook trust


def trust_after_install(p: planned.Plan, env: Mapping[str, str], state: core.State) -> None:
    """After a real install: ask Codex to trust attend's hooks, and record the keys it trusted (so
    uninstall removes exactly those)."""
    trusted = trust_codex_hooks(p, env, state)
    if trusted is not None:
        state.data["codex_trusted"] = sorted(set(state.data.get("codex_trusted", [])) | set(trusted))


def trust_codex_hooks(p: planned.Plan, env: Mapping[str, str], state: core.State) -> list[str] | None:
    """Ask Codex to trust attend's hooks, the supported way; the keys trusted now (or already), or
    None when it could not be done (the reason is in ``p.notes``)."""
    exe = env.get("ATTEND_CODEX_BIN") or planned.binary(CODEX_BIN, env)
    if not exe:
        p.notes.append(
            "Codex hooks not trusted yet (no codex on PATH): Codex skips an untrusted hook silently; "
            "open codex and trust attend's Stop hook (/hooks), or run attend install again with codex on PATH"
        )
        return None
    try:
        keys = _trust(exe, p, env)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        p.notes.append(
            f"Codex hooks not trusted ({type(e).__name__}: {e}); open codex and trust attend's Stop hook (/hooks)"
        )
        return None
    p.notes.append(
        f"trusted attend's Codex hook{'s' if len(keys) != 1 else ''} with Codex itself "
        f"(codex app-server config/value/write hooks.state.<key>.trusted_hash): {', '.join(keys) or 'none needed'}"
    )
    return keys


def _trust(exe: str, p: planned.Plan, env: Mapping[str, str]) -> list[str]:
    import select
    import time

    run_env = {**env, "CODEX_HOME": str(p.target.dir)}
    proc = subprocess.Popen(
        [exe, "app-server", "--listen", "stdio://"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=run_env,
        cwd=str(p.target.dir),
    )
    assert proc.stdin is not None and proc.stdout is not None
    deadline = time.monotonic() + TRUST_TIMEOUT
    buffer = b""
    ids = iter(range(1, 1000))

    def ask(method: str, params: dict[str, Any]) -> Any:
        nonlocal buffer
        assert proc.stdin is not None and proc.stdout is not None
        rid = next(ids)
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n")
        proc.stdin.flush()
        while True:
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                try:
                    msg = safejson.loads(line)
                except ValueError:
                    continue
                if isinstance(msg, dict) and msg.get("id") == rid:
                    if "error" in msg:
                        raise ValueError(f"{method}: {msg['error'].get('message', msg['error'])}")
                    return msg.get("result")
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(method, TRUST_TIMEOUT)
            ready, _, _ = select.select([proc.stdout], [], [], left)
            chunk = os.read(proc.stdout.fileno(), 65536) if ready else b""
            if ready and not chunk:
                raise OSError("codex app-server ended")
            buffer += chunk

    try:
        ask("initialize", {"clientInfo": {"name": "attend-install", "version": "1"}})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "initialized"}).encode() + b"\n")
        proc.stdin.flush()
        listed = ask("hooks/list", {"cwds": [str(p.target.dir)]})
        keys = []
        for entry in _hook_entries(listed):
            key, command = entry.get("key"), entry.get("command")
            mine = isinstance(command, str) and p.target.owns(command)
            if not (isinstance(key, str) and mine and key.startswith(str(p.target.settings) + ":")):
                continue
            keys.append(key)
            if entry.get("trustStatus") != "trusted":
                ask(
                    "config/value/write",
                    {
                        "keyPath": f'hooks.state."{key}".trusted_hash',
                        "value": entry.get("currentHash"),
                        "mergeStrategy": "upsert",
                    },
                )
        return keys
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _hook_entries(listed: Any) -> list[dict[str, Any]]:
    """Every hook entry in a ``hooks/list`` result, however it nests them (per cwd, per event)."""
    out: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "key" in node and "currentHash" in node:
                out.append(node)
                return
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(listed)
    return out


def trust_check(
    target: core.Target, hooks: dict[str, Any], config: dict[str, Any], env: Mapping[str, str], fix: str
) -> HostCheck:
    """Codex skips an untrusted hook silently: each of attend's Stop hooks needs its
    ``hooks.state."<hooks.json>:stop:<group>:<hook>".trusted_hash`` in config.toml (Codex's own key)."""
    keys = [
        f"{target.settings}:stop:{g}:{h}"
        for g, group in enumerate(hook_groups(hooks, "Stop"))
        for h, entry in enumerate(group_hooks(group))
        if isinstance(entry, dict) and isinstance(entry.get("command"), str) and target.owns(entry["command"])
    ]
    state = config.get("hooks", {}).get("state", {}) if isinstance(config.get("hooks"), dict) else {}
    untrusted = [
        k
        for k in keys
        if not isinstance(state.get(k) if isinstance(state, dict) else None, dict)
        or not isinstance(state[k].get("trusted_hash"), str)
    ]
    if not keys:
        return HostCheck(TRUST_CHECK, False, "no attend hook to trust (see the Stop hook)", fix)
    if untrusted:
        how = (
            fix
            if planned.binary(CODEX_BIN, env)
            else ("put codex on PATH and run " + fix + ", or open codex and trust attend's Stop hook (/hooks)")
        )
        return HostCheck(
            TRUST_CHECK, False, f"not trusted in config.toml, so Codex skips it silently: {', '.join(untrusted)}", how
        )
    return HostCheck(TRUST_CHECK, True, f"trusted in config.toml ({len(keys)} hook{'s' if len(keys) != 1 else ''})")
