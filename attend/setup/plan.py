"""One host's files as a ``Plan``, installed and uninstalled with ``attend install``'s guarantees.

A plan is one JSON file merged by the same three-way merge (attend.setup.merge), the files copied
(hook scripts, the skill), and optionally a TOML file attend edits beside it (``TomlPart``: Codex's
``config.toml``, edited with tomlkit so the user's comments and order stay). Per target, attend's
config folder keeps what attend wrote last (the base), the bytes each file had before attend first
wrote it, and backups, exactly as for a Claude Code target (attend.setup.install); uninstall restores
a file byte for byte when nothing else changed it since, else strips attend's entries from it.

What is one host's (which files, which entries, Codex's hook trust) is its adapter's
(attend/setup/<host>.py); nothing here names a host.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from attend import layout, safejson
from attend.setup import install as core
from attend.setup import merge, safetoml
from attend.setup.data import data_file


class TomlPart(Protocol):
    """attend's part of a TOML file beside the JSON one (the plan's ``target.claude_json``)."""

    def with_ours(self, doc: Any) -> Any:
        """A copy of the tomlkit document with attend's entries set."""

    def without_ours(self, doc: Any, state: core.State) -> Any:
        """A copy with every entry attend set (as ``state`` recorded them) removed."""

    @property
    def tables(self) -> tuple[tuple[str, ...], ...]:
        """The keys attend merges into, each of which must be a table when the file has it."""


@dataclass
class Plan:
    host: str  # the host's name
    target: core.Target  # dir; settings = the JSON file merged; claude_json = the TOML file, if any
    ours: dict[str, Any]  # attend's slice of the JSON file
    copies: list[tuple[Path, Path, int]]  # (shipped, destination, mode)
    toml: TomlPart | None = None  # attend's part of the TOML file (Codex's config.toml)
    notes: list[str] = field(default_factory=list)
    dry_run_notes: tuple[str, ...] = ()  # what a dry run says a real install would also do
    # Run after a real install writes the files, before attend's record is saved (Codex's hook trust).
    after: Callable[[Plan, Mapping[str, str], core.State], None] | None = None


# ---------------------------------------------------------------------- building a plan


def target_for(host: str, folder: Path, json_name: str, other: str, env: Mapping[str, str]) -> core.Target:
    """The target of a host's config ``folder``; attend's record of it is keyed by host and folder."""
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    digest = hashlib.sha256(f"{host}:{folder}".encode()).hexdigest()[:16]
    state = Path(layout.config_root(env)) / "targets" / digest
    return core.Target(folder, folder / json_name, folder / other, home, state)


def binary(name: str, env: Mapping[str, str]) -> str | None:
    """A program on the ``PATH`` of ``env``, by absolute path."""
    found = shutil.which(name, path=env.get("PATH"))
    return os.path.abspath(found) if found else None


def fragment(name: str, target: core.Target, attend_exe: str, scripts: tuple[str, ...]) -> dict[str, Any]:
    """The shipped JSON fragment ``settings/<name>``, its hook commands and attend's path filled in."""
    doc = safejson.loads(data_file("settings", name).read_text(encoding="utf-8"))
    subs = {f"@HOOKS@/{s}": target.hook_command(s) for s in scripts}
    subs["@ATTEND@"] = attend_exe
    filled = core._fill(doc, subs)
    assert isinstance(filled, dict)
    return filled


def hook_copy(target: core.Target, script: str) -> tuple[Path, Path, int]:
    return (data_file("hooks", "ways", script), target.hooks_dir / script, 0o755)


def skill_copy(target: core.Target) -> tuple[Path, Path, int]:
    return (data_file(*core.SKILL_PATH), target.dir.joinpath(*core.SKILL_PATH), 0o644)


def presence(p: Plan) -> tuple[bool, bool]:
    """(the host's config folder exists, attend recorded an install there)."""
    return p.target.dir.is_dir(), (p.target.state_dir / core.STATE_FILE).exists()


# ---------------------------------------------------------------------- a TOML file


def load_toml(path: Path, tables: tuple[tuple[str, ...], ...] = ()) -> tuple[bytes | None, Any, int]:
    """(raw bytes or None, the tomlkit document, mode); refused like a JSON file attend must not write,
    and when one of ``tables`` (keys attend merges into) is there but is not a table: one line naming
    the key, nothing written."""
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
        doc = tomlkit.parse(text)
    except Exception as e:
        raise core.InstallError(f"{path} is not valid TOML ({e}); fix it, then run again; nothing was changed") from e
    for key in tables:
        value: Any = doc
        for i, part in enumerate(key):
            value = value.get(part) if isinstance(value, Mapping) else None
            if value is not None and not isinstance(value, Mapping):
                raise core.InstallError(
                    f"{path}: {'.'.join(key[: i + 1])} is {_toml_kind(value)}, not a table; fix it, then run "
                    "again; nothing was changed"
                )
    return raw, doc, stat.S_IMODE(st.st_mode)


def _toml_kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return f"a {type(value).__name__}"


# ---------------------------------------------------------------------- install


def install(p: Plan, env: Mapping[str, str], dry_run: bool = False) -> core.Outcome:
    """A dry run reports exactly the files a real run writes, the host's folder missing or not (a
    client attend wires before its first run); a real run records a folder it made, so uninstall
    removes it again when nothing else was put there."""
    target = p.target
    if dry_run:
        return _install(p, env, True)
    made = not target.dir.is_dir()
    if made:
        target.dir.mkdir(parents=True, mode=0o700)
    try:
        with core.target_lock(target):
            return _install(p, env, False, made)
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                target.dir.rmdir()
        raise


def _install(p: Plan, env: Mapping[str, str], dry_run: bool, made: bool = False) -> core.Outcome:
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
        toml_raw, toml_doc, toml_mode = load_toml(target.claude_json, p.toml.tables)
        new_toml = tomlkit.dumps(p.toml.with_ours(toml_doc)).encode()
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
        p.notes.extend(p.dry_run_notes)
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
    if made:
        state.data[core.MADE_TARGET] = True
    state.file("settings")["base"] = p.ours
    state.file("settings")["path"] = str(target.settings)
    if p.after is not None:
        p.after(p, env, state)
    if p.toml is not None:  # as it stands now: the host itself may have rewritten it (Codex's trust)
        with contextlib.suppress(OSError):
            state.file("config_toml")["written_sha256"] = core._sha(target.claude_json.read_bytes())
    if outcome.changes or not (target.state_dir / core.STATE_FILE).exists() or p.notes:
        state.save()
    return outcome


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
        raw, doc, mode = load_toml(target.claude_json, p.toml.tables)
        if raw is not None:
            recorded, original = state.original("config_toml")
            unchanged = state.exists and core._sha(raw) == state.file("config_toml").get("written_sha256")
            before = tomlkit.parse(original.decode("utf-8")) if original else tomlkit.document()
            same = p.toml.without_ours(before, state).unwrap() == p.toml.without_ours(doc, state).unwrap()
            if recorded and unchanged and same:
                first = state.file("config_toml").get("mode")
                _restore(state, target.claude_json, raw, original, first if isinstance(first, int) else mode, outcome)
            else:
                stripped = tomlkit.dumps(p.toml.without_ours(doc, state)).encode()
                if stripped != raw:
                    backup = state.backup(target.claude_json, raw)
                    core.write_atomic(target.claude_json, stripped, mode)
                    if backup:
                        outcome.backups.append(str(backup))
                    diff = core.unified_diff(target.claude_json, raw, stripped)
                    outcome.changes.append(core.Change(str(target.claude_json), "write", diff))
    core.withdraw_copies(state, target, p.copies, outcome)
    core.remove_made_target(state, target, outcome)
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
    action = "remove" if original is None else "restore"  # install created it: uninstall removes it
    outcome.changes.append(core.Change(str(path), action, core.unified_diff(path, raw, original)))
    if backup:
        outcome.backups.append(str(backup))
