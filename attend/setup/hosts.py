"""Wiring attend into Codex CLI and Gemini CLI, with ``attend install``'s guarantees for Claude Code.

Each host is a ``Plan``: one JSON file merged by the same three-way merge (attend.setup.merge), the
files copied (hook scripts, the skill), and for Codex its ``config.toml``, edited with tomlkit so
the user's comments and order stay. Per target, attend's config folder keeps what attend wrote last
(the base), the bytes each file had before attend first wrote it, and backups, exactly as for a
Claude Code target (attend.setup.install); uninstall restores a file byte for byte when nothing
else changed it since, else strips attend's entries from it.

- **Codex** (``$CODEX_HOME``, else ``~/.codex``): ``hooks.json`` gets the Stop hook
  (``attend-codex-stop.sh``: the drain, then the waiter that wakes an idle thread with ``codex
  queue``); ``config.toml`` gets ``[mcp_servers.attend]``. Codex runs a hook only once it is
  trusted, and skips an untrusted one silently, so install asks Codex itself to trust attend's hooks:
  ``codex app-server`` over stdio, ``hooks/list`` for the hash of each of attend's hooks, then
  ``config/value/write`` of ``hooks.state."<key>".trusted_hash`` (Codex writes that table into
  config.toml). The hash covers the command, so a changed command is trusted again. Without a codex
  binary on PATH the output says the hooks are not trusted yet, and how to trust them.
- **Gemini** (``~/.gemini``): ``settings.json`` gets ``mcpServers.attend`` (trusted), the
  SessionStart hook that records the session for the gemini process, and the AfterAgent drain.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attend import layout, safejson
from attend.setup import install as core
from attend.setup import merge, safetoml
from attend.setup.data import data_file

HOSTS = ("claude", "codex", "gemini")
CODEX_STOP = "attend-codex-stop.sh"
GEMINI_START = "attend-gemini-start.sh"
TRUST_TIMEOUT = 30.0  # seconds for Codex's app-server to list and trust the hooks


@dataclass
class Plan:
    host: str
    target: core.Target  # dir; settings = the JSON file merged; claude_json = Codex's config.toml
    ours: dict[str, Any]  # attend's slice of the JSON file
    copies: list[tuple[Path, Path, int]]  # (shipped, destination, mode)
    toml: dict[str, Any] | None = None  # Codex: the [mcp_servers.attend] table
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------- where each host lives


def codex_home(env: Mapping[str, str]) -> Path:
    custom = env.get("CODEX_HOME")
    return Path(custom) if custom else Path(env.get("HOME") or os.path.expanduser("~")) / ".codex"


def gemini_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".gemini"


def _target(host: str, folder: Path, json_name: str, other: str, env: Mapping[str, str]) -> core.Target:
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    digest = hashlib.sha256(f"{host}:{folder}".encode()).hexdigest()[:16]
    state = Path(layout.config_root(env)) / "targets" / digest
    return core.Target(folder, folder / json_name, folder / other, home, state)


def binary(host: str, env: Mapping[str, str]) -> str | None:
    found = shutil.which(host, path=env.get("PATH"))
    return os.path.abspath(found) if found else None


def detected(env: Mapping[str, str]) -> list[str]:
    """The hosts this user has: its config folder exists (each client makes it at its first run, and
    Claude Code's own install asks for it the same way)."""
    folders = (
        ("claude", Path(core.requested_folder(None, env))),
        ("codex", codex_home(env)),
        ("gemini", gemini_home(env)),
    )
    return [name for name, folder in folders if folder.is_dir()]


def _fragment(name: str, target: core.Target, attend_exe: str, scripts: tuple[str, ...]) -> dict[str, Any]:
    doc = safejson.loads(data_file("settings", name).read_text(encoding="utf-8"))
    subs = {f"@HOOKS@/{s}": target.hook_command(s) for s in scripts}
    subs["@ATTEND@"] = attend_exe
    filled = core._fill(doc, subs)
    assert isinstance(filled, dict)
    return filled


def _skill(target: core.Target) -> tuple[Path, Path, int]:
    return (data_file(*core.SKILL_PATH), target.dir.joinpath(*core.SKILL_PATH), 0o644)


def plan(host: str, env: Mapping[str, str], attend_exe: str) -> Plan:
    if host == "codex":
        folder = codex_home(env)
        target = _target("codex", folder, "hooks.json", "config.toml", env)
        ours = _fragment("codex-hooks.json", target, attend_exe, (CODEX_STOP,))
        # The tools run without asking, as Claude Code's allow entries let them (attend's own rule
        # decides who may act; a sandboxed Codex would otherwise refuse every call under "never").
        table: dict[str, Any] = {"command": attend_exe, "args": ["mcp"], "default_tools_approval_mode": "approve"}
        # Codex starts MCP servers with a filtered environment: pass where the spool is.
        passed = {k: env[k] for k in ("ATTEND_HOME", "XDG_CACHE_HOME") if env.get(k)}
        if passed:
            table["env"] = passed
        copies = [(data_file("hooks", "ways", CODEX_STOP), target.hooks_dir / CODEX_STOP, 0o755), _skill(target)]
        return Plan("codex", target, ours, copies, table)
    if host == "gemini":
        folder = gemini_home(env)
        target = _target("gemini", folder, "settings.json", "settings.json", env)
        ours = _fragment("gemini.json", target, attend_exe, (GEMINI_START, core.DRAIN_SCRIPT))
        passed = {k: env[k] for k in ("ATTEND_HOME",) if env.get(k)}
        if passed:
            ours["mcpServers"]["attend"]["env"] = passed
        copies = [
            (data_file("hooks", "ways", GEMINI_START), target.hooks_dir / GEMINI_START, 0o755),
            (data_file("hooks", "ways", core.DRAIN_SCRIPT), target.hooks_dir / core.DRAIN_SCRIPT, 0o755),
            _skill(target),
        ]
        return Plan("gemini", target, ours, copies)
    raise ValueError(host)


def gemini_wake_note(env: Mapping[str, str]) -> str:
    """What install says of a Gemini session's idle wake: available where the user's settings turn a
    finished background command into a turn, which is an experimental Gemini setting attend never
    turns on for the user (docs/architecture/hosts.md)."""
    from attend.hosts import gemini

    why = gemini.steering(None, env)
    if why is None:
        return "idle wake: on (steering is enabled: an idle interactive session is woken through attend wait --once)"
    return (
        f"idle wake: off ({why}); messages arrive at each turn end. To have an idle session woken, set "
        'experimental.modelSteering true and tools.shell.backgroundCompletionBehavior "inject" in '
        f"{gemini_home(env) / 'settings.json'} (experimental Gemini settings; attend does not turn them on)"
    )


# ---------------------------------------------------------------------- Codex's config.toml


def load_toml(path: Path) -> tuple[bytes | None, Any, int]:
    """(raw bytes or None, the tomlkit document, mode); refused like a JSON file attend must not write."""
    import tomlkit

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None, tomlkit.document(), 0o600
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise core.InstallError(f"{path} is not a regular file (a symlink?); nothing was changed")
    if not st.st_mode & stat.S_IWUSR or not os.access(path, os.W_OK):
        raise core.InstallError(f"{path} is read-only; make it writable (chmod u+w) if attend may change it")
    with open(path, "rb") as f:
        raw = f.read(safetoml.SIZE + 1)
    try:
        text = safetoml.check(raw.decode("utf-8"), str(path))
    except safetoml.Unbounded as e:
        raise core.InstallError(f"{e}; nothing was changed") from None
    except UnicodeDecodeError as e:
        raise core.InstallError(f"{path} is not UTF-8 text ({e}); nothing was changed") from None
    try:
        return raw, tomlkit.parse(text), stat.S_IMODE(st.st_mode)
    except Exception as e:
        raise core.InstallError(f"{path} is not valid TOML ({e}); fix it, then run again; nothing was changed") from e


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
        fresh = tomlkit.table()
        for k, v in table.items():
            fresh[k] = tomlkit.inline_table() if isinstance(v, dict) else v
            if isinstance(v, dict):
                fresh[k].update(v)
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


def toml_user_view(doc: Any, trusted: list[str]) -> Any:
    return toml_with(doc, None, trusted).unwrap()


# ---------------------------------------------------------------------- install


def install(p: Plan, env: Mapping[str, str], dry_run: bool = False) -> core.Outcome:
    target = p.target
    if not target.dir.is_dir():
        if dry_run:
            return core.Outcome(str(target.dir), str(target.settings), str(target.claude_json), [], [])
        target.dir.mkdir(parents=True, mode=0o700)
    if dry_run:
        return _install(p, env, True)
    with core.target_lock(target):
        return _install(p, env, False)


def _install(p: Plan, env: Mapping[str, str], dry_run: bool) -> core.Outcome:
    import tomlkit

    target, owns = p.target, p.target.owns
    attend_exe = core.attend_executable(env)
    state = core.State.load(target.state_dir)
    loaded = core.load_json(target.settings)
    base = state.file("settings").get("base", {}) if state.exists else {}
    new_doc = merge.merge(loaded.doc, p.ours, base, owns)
    toml_raw, toml_doc, toml_mode = (None, None, 0o600)
    new_toml: bytes | None = None
    if p.toml is not None:
        toml_raw, toml_doc, toml_mode = load_toml(target.claude_json)
        new_toml = tomlkit.dumps(toml_with(toml_doc, p.toml, [])).encode()
    copies = core.copy_plan(p.copies, attend_exe)
    outcome = core.Outcome(str(target.dir), str(target.settings), str(target.claude_json), [], [])

    json_changes = loaded.raw is None or new_doc != loaded.doc
    toml_changes = p.toml is not None and new_toml != toml_raw
    if dry_run:
        if json_changes:
            diff = core.unified_diff(loaded.path, loaded.raw, core.render_json(new_doc))
            outcome.changes.append(core.Change(str(loaded.path), "create" if loaded.raw is None else "write", diff))
        if toml_changes:
            diff = core.unified_diff(target.claude_json, toml_raw, new_toml)
            outcome.changes.append(
                core.Change(str(target.claude_json), "create" if toml_raw is None else "write", diff)
            )
        for _, dest, _, _ in copies:
            outcome.changes.append(core.Change(str(dest), "write" if dest.is_file() else "create", ""))
        if p.host == "codex":
            p.notes.append(
                "would ask Codex to trust attend's Stop hook (codex app-server: hooks/list, config/value/write)"
            )
        return outcome

    undo: list[Callable[[], None]] = []
    try:
        if json_changes:
            core._apply(state, "settings", loaded, new_doc, p.ours, base, owns, outcome, undo)
        if toml_changes and new_toml is not None:
            state.remember_original("config_toml", toml_raw)
            state.file("config_toml").setdefault("mode", toml_mode)  # Codex rewrites it 0600 when it trusts
            backup = state.backup(target.claude_json, toml_raw)
            core.write_atomic(target.claude_json, new_toml, toml_mode)
            if backup:
                outcome.backups.append(str(backup))
            diff = core.unified_diff(target.claude_json, toml_raw, new_toml)
            outcome.changes.append(
                core.Change(str(target.claude_json), "create" if toml_raw is None else "write", diff)
            )
            raw_before, path = toml_raw, target.claude_json
            undo.append(
                lambda: core.write_atomic(path, raw_before, toml_mode) if raw_before is not None else os.unlink(path)
            )
        for _, dest, mode, data in copies:
            core._place_copy(state, target, dest, mode, data, outcome, undo)
    except BaseException:
        for step in reversed(undo):
            with contextlib.suppress(OSError):
                step()
        raise
    state.data["target"] = str(target.dir)
    state.data["host"] = p.host
    state.file("settings")["base"] = p.ours
    state.file("settings")["path"] = str(target.settings)
    if p.host == "codex":
        trusted = trust_codex_hooks(p, env, state)
        if trusted is not None:
            state.data["codex_trusted"] = sorted(set(state.data.get("codex_trusted", [])) | set(trusted))
        with contextlib.suppress(OSError):
            state.file("config_toml")["written_sha256"] = core._sha(target.claude_json.read_bytes())
    if outcome.changes or not (target.state_dir / core.STATE_FILE).exists() or p.notes:
        state.save()
    return outcome


# ---------------------------------------------------------------------- Codex's hook trust


def trust_codex_hooks(p: Plan, env: Mapping[str, str], state: core.State) -> list[str] | None:
    """Ask Codex to trust attend's hooks, the supported way; the keys trusted now (or already), or
    None when it could not be done (the reason is in ``p.notes``)."""
    exe = env.get("ATTEND_CODEX_BIN") or binary("codex", env)
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


def _trust(exe: str, p: Plan, env: Mapping[str, str]) -> list[str]:
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


# ---------------------------------------------------------------------- uninstall


def uninstall(p: Plan) -> core.Outcome:
    target = p.target
    outcome = core.Outcome(str(target.dir), str(target.settings), str(target.claude_json), [], [])
    if not target.dir.is_dir():
        return outcome
    with core.target_lock(target):
        return _uninstall(p, outcome)


def _uninstall(p: Plan, outcome: core.Outcome) -> core.Outcome:
    import tomlkit

    target, owns = p.target, p.target.owns
    state = core.State.load(target.state_dir)
    file = core.load_json(target.settings)
    if file.raw is not None:
        base = merge.deep_union(p.ours, state.file("settings").get("base", {}) if state.exists else {})
        recorded, original = state.original("settings")
        unchanged = state.exists and core._sha(file.raw) == state.file("settings").get("written_sha256")
        if recorded and unchanged and core._same_user_part(original, file.doc, base, owns):
            _restore(state, file.path, file.raw, original, file.mode, outcome)
        else:
            stripped = merge.strip(file.doc, base, owns)
            if stripped != file.doc:
                written, backup = core.verified_write(state, file, stripped, base, owns)
                if backup:
                    outcome.backups.append(str(backup))
                outcome.changes.append(
                    core.Change(str(file.path), "write", core.unified_diff(file.path, file.raw, written))
                )
    if p.toml is not None:
        raw, doc, mode = load_toml(target.claude_json)
        trusted = list(state.data.get("codex_trusted", [])) if state.exists else []
        if raw is not None:
            recorded, original = state.original("config_toml")
            unchanged = state.exists and core._sha(raw) == state.file("config_toml").get("written_sha256")
            before = tomlkit.parse(original.decode("utf-8")) if original else tomlkit.document()
            same = toml_user_view(before, trusted) == toml_user_view(doc, trusted)
            if recorded and unchanged and same:
                first = state.file("config_toml").get("mode")
                _restore(state, target.claude_json, raw, original, first if isinstance(first, int) else mode, outcome)
            else:
                stripped = tomlkit.dumps(toml_with(doc, None, trusted)).encode()
                if stripped != raw:
                    backup = state.backup(target.claude_json, raw)
                    core.write_atomic(target.claude_json, stripped, mode)
                    if backup:
                        outcome.backups.append(str(backup))
                    diff = core.unified_diff(target.claude_json, raw, stripped)
                    outcome.changes.append(core.Change(str(target.claude_json), "write", diff))
    core.withdraw_copies(state, target, p.copies, outcome)
    state.forget()
    return outcome


def _restore(
    state: core.State, path: Path, raw: bytes, original: bytes | None, mode: int, outcome: core.Outcome
) -> None:
    backup = state.backup(path, raw)
    if original is None:
        os.unlink(path)
    else:
        core.write_atomic(path, original, mode)
    outcome.changes.append(core.Change(str(path), "restore", core.unified_diff(path, raw, original)))
    if backup:
        outcome.backups.append(str(backup))
