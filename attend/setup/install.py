"""Apply attend's baseline to a Claude Code configuration (a *target*), and withdraw it.

A target is a Claude Code config folder: ``~/.claude``, ``$CLAUDE_CONFIG_DIR``, or a project's
``<project>/.claude``. attend writes:
- ``<target>/settings.json``: the allow entries, the Stop-hook drain, the waiting conduit (an
  ``asyncRewake`` Stop hook) and the re-presentation after a compaction (a SessionStart hook,
  matcher ``compact``) (settings/permissions.json, settings/hooks.json), by the three-way merge in
  attend.setup.merge;
- the matching MCP file (``~/.claude.json`` for ``~/.claude``, ``<project>/.mcp.json`` for a
  project's ``.claude``, else ``<target>/.claude.json``): ``mcpServers.attend`` (settings/mcp.json).
  Claude Code reads a user's MCP servers only from the first, a project's only from the second;
- ``<target>/hooks/ways/attend-*.sh`` (0755) and ``<target>/skills/attend/SKILL.md``.

Per target, attend's config folder keeps the base (what attend wrote last), the bytes each file
had before attend first wrote it, and timestamped backups. Around every JSON write: back up, write
atomically (tmp, fsync, rename, fsync the folder), re-read, and check the user's view (everything
that is not attend's) is unchanged, else restore the backup and fail. The base is saved only after
every write verified. Nothing is written when the merge changes nothing.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import fcntl
import hashlib
import json
import math
import os
import shlex
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attend import hosts, layout, safejson
from attend.errors import AttendError, UsageError
from attend.setup import merge
from attend.setup.data import data_file

SETTINGS_FRAGMENTS = ("permissions.json", "hooks.json")
MCP_FRAGMENT = "mcp.json"
GUARD_FRAGMENT = "guard.json"
DRAIN_SCRIPT = "attend-drain-stop.sh"
WAIT_SCRIPT = "attend-wait-stop.sh"
GUARD_SCRIPT = "attend-guard-pre.sh"
COMPACT_SCRIPT = "attend-compact-start.sh"
EDIT_SCRIPT = "attend-edit-pre.sh"  # the lease check before each edit (attend/leases), every host
SKILL_PATH = ("skills", "attend", "SKILL.md")
HOOKS_SUBDIR = ("hooks", "ways")
STATE_FILE = "state.json"
PROJECT_MCP = ".mcp.json"
MADE_TARGET = "made_target"  # in a target's record: install made the folder itself (uninstall removes it if empty)


class InstallError(AttendError):
    """The configuration cannot be changed safely; nothing was changed."""


# ---------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    dir: Path
    settings: Path
    claude_json: Path
    home: Path
    state_dir: Path

    @property
    def hooks_dir(self) -> Path:
        return self.dir.joinpath(*HOOKS_SUBDIR)

    def hook_command(self, script: str) -> str:
        """The command string for a hook script: short, because the model sees it with every delivery."""
        path = self.hooks_dir / script
        try:
            rel = path.relative_to(self.home)
        except ValueError:
            return shlex.quote(str(path))
        quoted = shlex.quote(str(rel))
        return f"~/{quoted}" if not quoted.startswith("'") else f'"$HOME"/{quoted}'

    @property
    def is_project(self) -> bool:
        """A project's ``.claude`` folder, whose MCP server goes in the project's ``.mcp.json``: files a
        project commits, so they name ``attend`` on PATH, never one user's venv."""
        return self.claude_json.name == PROJECT_MCP

    def owns(self, command: str) -> bool:
        """A hook command is attend's when its executable is an attend-*.sh in this target's hooks/ways/."""
        try:
            words = shlex.split(command.replace("~/", "$HOME/", 1) if command.startswith("~/") else command)
        except ValueError:
            words = command.split()
        if not words:
            return False
        exe = words[0].replace("${HOME}", str(self.home)).replace("$HOME", str(self.home))
        exe = os.path.normpath(exe)
        name = os.path.basename(exe)
        folder = os.path.dirname(exe)
        mine = {str(self.hooks_dir), os.path.realpath(self.hooks_dir)}
        return name.startswith("attend-") and name.endswith(".sh") and folder in mine


def requested_folder(target: str | None, env: Mapping[str, str]) -> str:
    """The config folder ``--target`` (or the environment) names, whether or not it exists."""
    folder = Path(os.path.abspath(os.path.expanduser(target))) if target else Path(hosts.DEFAULT.config_home(env))
    return os.path.abspath(folder)


def resolve_target(target: str | None, env: Mapping[str, str] | None = None, make: bool = False) -> Target:
    """``make``: a project's ``.claude`` folder that ``--target`` names and that does not exist yet is
    install's to create, where the project's folder does (``attend install --target ./.claude``); any
    other missing folder is refused (a typo would otherwise become a folder)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    folder = Path(requested_folder(target, env))
    makeable = make and target is not None and folder.name == ".claude" and not folder.exists()
    makeable = makeable and folder.parent.is_dir()
    if not folder.is_dir() and not makeable:
        what = "is not a folder" if folder.exists() else "does not exist"
        raise InstallError(
            f"target {folder} {what}; start Claude Code once (or mkdir -p {folder}), or name another with --target"
        )
    custom = env.get("CLAUDE_CONFIG_DIR")
    is_custom = bool(custom) and Path(os.path.abspath(str(custom))) == folder
    is_default = folder == home / ".claude" and not is_custom
    if is_default:
        claude_json = home / ".claude.json"
    elif folder.name == ".claude" and not is_custom:
        # A project's .claude folder: Claude Code reads a project's MCP servers from <project>/.mcp.json
        # (it never reads a .claude.json inside the project), beside the folder's settings.json.
        claude_json = folder.parent / PROJECT_MCP
    else:
        claude_json = folder / ".claude.json"
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    return Target(
        folder, folder / "settings.json", claude_json, home, Path(layout.config_root(env)) / "targets" / digest
    )


def attend_executable(env: Mapping[str, str] | None = None) -> str:
    """An absolute path to attend, so a client with a thin PATH still starts the MCP server."""
    env = os.environ if env is None else env
    beside = Path(sys.executable).parent / "attend"
    if os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("attend", path=env.get("PATH"))
    return os.path.abspath(found) if found else "attend"


# ---------------------------------------------------------------------- the baseline


def _fragment(name: str) -> dict[str, Any]:
    doc = safejson.loads(data_file("settings", name).read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def _fill(value: Any, subs: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for token, text in subs.items():
            value = value.replace(token, text)
        return value
    if isinstance(value, list):
        return [_fill(v, subs) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, subs) for k, v in value.items()}
    return value


def _hook_subs(target: Target) -> dict[str, str]:
    # The fragments name scripts as @HOOKS@/<script>; the command is made whole from the target.
    return {
        f"@HOOKS@/{s}": target.hook_command(s)
        for s in (DRAIN_SCRIPT, WAIT_SCRIPT, GUARD_SCRIPT, COMPACT_SCRIPT, EDIT_SCRIPT)
    }


def settings_baseline(target: Target) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for name in SETTINGS_FRAGMENTS:
        doc = merge.deep_union(doc, _fragment(name))
    filled = _fill(doc, _hook_subs(target))
    assert isinstance(filled, dict)
    return filled


def mcp_baseline(attend_exe: str) -> dict[str, Any]:
    filled = _fill(_fragment(MCP_FRAGMENT), {"@ATTEND@": attend_exe})
    assert isinstance(filled, dict)
    return filled


def guard_wiring(target: Target) -> dict[str, Any]:
    """The guard fragment as it would be wired into this target (never applied by install)."""
    filled = _fill(_fragment(GUARD_FRAGMENT), _hook_subs(target))
    assert isinstance(filled, dict)
    return filled


def copies(target: Target) -> list[tuple[Path, Path, int]]:
    """(shipped file, destination, mode) for every file install places."""
    return [
        (data_file("hooks", "ways", DRAIN_SCRIPT), target.hooks_dir / DRAIN_SCRIPT, 0o755),
        (data_file("hooks", "ways", WAIT_SCRIPT), target.hooks_dir / WAIT_SCRIPT, 0o755),
        (data_file("hooks", "ways", GUARD_SCRIPT), target.hooks_dir / GUARD_SCRIPT, 0o755),
        (data_file("hooks", "ways", COMPACT_SCRIPT), target.hooks_dir / COMPACT_SCRIPT, 0o755),
        (data_file("hooks", "ways", EDIT_SCRIPT), target.hooks_dir / EDIT_SCRIPT, 0o755),
        (data_file(*SKILL_PATH), target.dir.joinpath(*SKILL_PATH), 0o644),
    ]


# The hook scripts name attend as ``attend=@ATTEND@`` (``bin=`` in the guard); install writes the
# absolute path of the attend that runs it there. The Stop hook runs with the client's PATH, which
# need not hold the venv attend was installed into (the README's own install).
ATTEND_TOKEN = b"@ATTEND@"


def script_bytes(src: Path, attend_exe: str) -> bytes:
    """A shipped hook script as install places it: the attend path filled in, shell-quoted. A name
    that is not absolute (no attend found) leaves it empty, so the script looks on PATH."""
    value = shlex.quote(attend_exe) if os.path.isabs(attend_exe) else "''"
    return src.read_bytes().replace(ATTEND_TOKEN, value.encode())


def recorded_attend(target: Target) -> str | None:
    """The attend the installed Stop hook runs (what install recorded), or None: no script, or none recorded."""
    try:
        text = (target.hooks_dir / DRAIN_SCRIPT).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("attend="):
            try:
                words = shlex.split(line[len("attend=") :])
            except ValueError:
                return None
            value = words[0] if words else ""
            return value if os.path.isabs(value) else None
    return None


def is_installed(path: Path) -> bool:
    return path.is_file()


def is_executable(path: str) -> bool:
    return os.access(path, os.X_OK)


def user_path_folder(env: Mapping[str, str]) -> str | None:
    """The first PATH folder the user can write that is theirs: under HOME, or a ``…/local/bin``
    (never the package manager's /usr/bin, even for root). None when PATH has no such folder."""
    home = os.path.realpath(env.get("HOME") or os.path.expanduser("~"))
    for d in (env.get("PATH") or "").split(os.pathsep):
        real = os.path.realpath(d) if os.path.isabs(d) else ""
        ours = real.startswith(home + os.sep) or real.endswith(os.sep + os.path.join("local", "bin"))
        if ours and os.path.isdir(real) and os.access(real, os.W_OK | os.X_OK):
            return d
    return None


# ---------------------------------------------------------------------- reading and writing files


@dataclass
class Loaded:
    path: Path
    raw: bytes | None  # None: the file does not exist
    doc: dict[str, Any]
    mode: int


def load_json(path: Path) -> Loaded:
    """Read a JSON object file, refusing anything attend must not write: symlink, read-only, not JSON."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        _check_folder_writable(path.parent)
        return Loaded(path, None, {}, 0o600)
    if stat.S_ISLNK(st.st_mode):
        raise InstallError(
            f"{path} is a symlink; attend replaces files whole and would break the link. "
            "Point --target at the real folder, or replace the link with its file; nothing was changed"
        )
    if not stat.S_ISREG(st.st_mode):
        raise InstallError(f"{path} is not a regular file; nothing was changed")
    # Mode bits as well as access(): root may write a 0444 file, but the owner marked it read-only.
    if not st.st_mode & stat.S_IWUSR or not os.access(path, os.W_OK):
        raise InstallError(
            f"{path} is read-only; make it writable (chmod u+w) if attend may change it; nothing was changed"
        )
    _check_folder_writable(path.parent)
    raw = path.read_bytes()
    try:
        doc = safejson.loads(raw, parse_constant=_not_finite, parse_float=_finite) if raw.strip() else {}
    except _NotFinite as e:
        raise InstallError(
            f"{path} holds {e}; rewritten it would read NaN or Infinity, which is not JSON to Claude Code. "
            "Replace it with a number or null, then run again; nothing was changed"
        ) from None
    except (ValueError, UnicodeDecodeError) as e:
        where = f" (line {e.lineno}, column {e.colno}: {e.msg})" if isinstance(e, json.JSONDecodeError) else ""
        raise InstallError(f"{path} is not valid JSON{where}; fix it, then run again; nothing was changed") from e
    if not isinstance(doc, dict):
        raise InstallError(f"{path} holds a JSON {type(doc).__name__}, not an object; nothing was changed")
    return Loaded(path, raw, doc, stat.S_IMODE(st.st_mode))


class _NotFinite(ValueError):
    pass


def _not_finite(token: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity``: Python's json reads them, no other JSON parser does."""
    raise _NotFinite(f"{token}, which is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e999: legal JSON, but a double holds it only as inf, written back as Infinity
        raise _NotFinite(f"the number {text}, beyond what a double holds")
    return value


def _check_folder_writable(folder: Path) -> None:
    while not folder.exists() and folder.parent != folder:  # a folder install would make: where it would
        folder = folder.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InstallError(f"cannot write in {folder}; nothing was changed")


def render_json(doc: dict[str, Any]) -> bytes:
    # allow_nan=False: a float that is not finite raises here rather than reach the file as Infinity.
    return (json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def write_atomic(path: Path, data: bytes, mode: int) -> None:
    """tmp in the same folder (O_EXCL), fsync, rename over, fsync the folder."""
    tmp = path.with_name(f".{path.name}.attend-{os.getpid()}-{time.time_ns()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)  # the umask masked open()'s mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def unified_diff(path: Path, before: bytes | None, after: bytes | None) -> str:
    a = (before or b"").decode("utf-8", "replace").splitlines(keepends=True)
    b = (after or b"").decode("utf-8", "replace").splitlines(keepends=True)
    old = str(path) if before is not None else "/dev/null"
    new = str(path) if after is not None else "/dev/null"
    return "".join(difflib.unified_diff(a, b, old, new))


# ---------------------------------------------------------------------- per-target state


@dataclass
class State:
    folder: Path
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, folder: Path) -> State:
        try:
            raw = safejson.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(folder)
        except ValueError as e:
            raise InstallError(
                f"attend's record for this target ({folder / STATE_FILE}) is corrupt; move it aside and run again"
            ) from e
        return cls(folder, raw if isinstance(raw, dict) else {})

    @property
    def exists(self) -> bool:
        return bool(self.data)

    def file(self, key: str) -> dict[str, Any]:
        files = self.data.setdefault("files", {})
        entry = files.setdefault(key, {})
        assert isinstance(entry, dict)
        return entry

    def remember_original(self, key: str, raw: bytes | None) -> None:
        """The bytes a file had before attend first wrote it, for a byte-exact uninstall."""
        entry = self.file(key)
        if "original" in entry:
            return
        entry["original"] = None if raw is None else base64.b64encode(raw).decode()

    def original(self, key: str) -> tuple[bool, bytes | None]:
        entry = self.data.get("files", {}).get(key, {})
        if "original" not in entry:
            return False, None
        value = entry["original"]
        return True, None if value is None else base64.b64decode(value)

    def backup(self, path: Path, raw: bytes | None) -> Path | None:
        if raw is None:
            return None
        folder = self.folder / "backups"
        layout.private_dirs(folder)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f".{time.time_ns() % 1_000_000_000:09d}"
        dest = folder / f"{stamp}-{path.name}"
        write_atomic(dest, raw, 0o600)
        return dest

    def save(self) -> None:
        layout.private_dirs(self.folder)
        write_atomic(self.folder / STATE_FILE, render_json(self.data), 0o600)

    def forget(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.folder / STATE_FILE)


# ---------------------------------------------------------------------- the verified write


@dataclass
class Change:
    path: str
    action: str  # "write" | "create" | "restore" | "remove" | "unchanged"
    diff: str = ""


def verified_write(
    state: State, loaded: Loaded, new_doc: dict[str, Any] | None, attends: dict[str, Any], owns: Callable[[str], bool]
) -> tuple[bytes | None, Path | None]:
    """Back up, write (or remove when ``new_doc`` is None) atomically, re-read, check the user's view.

    Returns the bytes now in place and the backup. A mismatch in the user's view restores the backup
    and raises. A file someone else rewrote meanwhile is left alone (reverting would lose their
    write) and raises too.
    """
    path = loaded.path
    backup = state.backup(path, loaded.raw)
    data = None if new_doc is None else render_json(new_doc)
    mode = loaded.mode if loaded.raw is not None else (0o600 if path.name == ".claude.json" else 0o644)
    if data is None:
        os.unlink(path)
        return None, backup
    write_atomic(path, data, mode)
    after = path.read_bytes()
    if after != data:
        raise InstallError(
            f"{path} changed while attend wrote it (another program wrote it too); "
            f"run the command again. The previous version is in {backup}"
        )
    if not merge.same_user_view(loaded.doc, safejson.loads(after), attends, owns):
        if loaded.raw is None:
            os.unlink(path)
        else:
            write_atomic(path, loaded.raw, mode)
        raise InstallError(
            f"attend's write to {path} would have changed settings that are not attend's; it was reverted "
            f"(backup: {backup}). This is a bug in attend: please report it"
        )
    return data, backup


def reread_if_changed(loaded: Loaded) -> Loaded:
    """The live client may rewrite .claude.json at any time: read it again just before writing."""
    fresh = load_json(loaded.path)
    return loaded if fresh.raw == loaded.raw else fresh


# ---------------------------------------------------------------------- install and uninstall


@dataclass
class Outcome:
    target: str
    settings: str
    claude_json: str
    changes: list[Change]
    backups: list[str]
    spool: str = ""
    purged: bool = False


def copy_plan(placed: list[tuple[Path, Path, int]], attend_exe: str) -> list[tuple[Path, Path, int, bytes]]:
    """The copies (shipped, destination, mode) whose destination is not already exactly what install
    would place, with the bytes to place."""
    plan = []
    for src, dest, mode in placed:
        data = script_bytes(src, attend_exe)
        try:
            st = os.lstat(dest)
            same = stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == mode and dest.read_bytes() == data
        except FileNotFoundError:
            same = False
        if not same:
            plan.append((src, dest, mode, data))
    return plan


LOCK_WAIT = 60.0  # seconds: an install takes well under one; a longer hold is a stopped process


@contextlib.contextmanager
def target_lock(target: Target) -> Iterator[None]:
    """One install or uninstall at a time per target. Each run's verified write would otherwise
    race another's: both read .claude.json, both write, and the loser finds its bytes gone.

    The lock is a flock on the target folder itself, so taking it creates no file (a refused run
    writes nothing); portalocker's polling is replaced by a 20 ms one of our own, without its import."""
    fd = os.open(target.dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise InstallError(
                        f"another attend install or uninstall has held {target.dir} for {LOCK_WAIT:.0f} s; "
                        "let it finish (or end it), then run again; nothing was changed"
                    ) from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing the only descriptor releases the lock


def install(target: Target, dry_run: bool = False, attend_exe: str | None = None) -> Outcome:
    attend_exe = attend_exe or attend_executable()
    if target.is_project:
        attend_exe = "attend"  # the project's files are everyone's who clones it: attend on their PATH
    if dry_run:
        return _install(target, True, attend_exe)  # writes nothing, so takes no lock (and makes no folder)
    made = not target.dir.is_dir()
    if made:
        target.dir.mkdir(mode=0o700)
    try:
        with target_lock(target):
            return _install(target, False, attend_exe, made)
    except BaseException:
        if made:
            with contextlib.suppress(OSError):
                target.dir.rmdir()
        raise


def _install(target: Target, dry_run: bool, attend_exe: str, made: bool = False) -> Outcome:
    owns = target.owns
    state = State.load(target.state_dir)
    # Every input is read and merged before anything is written, so bad input changes nothing.
    settings = load_json(target.settings)
    claude = load_json(target.claude_json)
    ours_settings = merge.gated(settings_baseline(target), settings.doc)
    ours_mcp = mcp_baseline(attend_exe)
    base_settings = state.file("settings").get("base", {}) if state.exists else {}
    base_mcp = state.file("claude_json").get("base", {}) if state.exists else {}
    new_settings = merge.merge(settings.doc, ours_settings, base_settings, owns)
    new_claude = merge.merge(claude.doc, ours_mcp, base_mcp, owns)
    plan = copy_plan(copies(target), attend_exe)
    outcome = Outcome(str(target.dir), str(target.settings), str(target.claude_json), [], [])

    if dry_run:
        for loaded, new in ((settings, new_settings), (claude, new_claude)):
            if loaded.raw is None or new != loaded.doc:
                diff = unified_diff(loaded.path, loaded.raw, render_json(new))
                outcome.changes.append(Change(str(loaded.path), "create" if loaded.raw is None else "write", diff))
        for _, dest, _, _data in plan:
            old = dest.read_bytes() if dest.is_file() and not dest.is_symlink() else None
            outcome.changes.append(Change(str(dest), "write" if old is not None else "create", ""))
        return outcome

    undo: list[Callable[[], None]] = []
    try:
        if settings.raw is None or new_settings != settings.doc:
            _apply(state, "settings", settings, new_settings, ours_settings, base_settings, owns, outcome, undo)
        claude = reread_if_changed(claude)
        new_claude = merge.merge(claude.doc, ours_mcp, base_mcp, owns)
        if claude.raw is None or new_claude != claude.doc:
            _apply(state, "claude_json", claude, new_claude, ours_mcp, base_mcp, owns, outcome, undo)
        for _, dest, mode, data in plan:
            _place_copy(state, target, dest, mode, data, outcome, undo)
    except BaseException:
        for step in reversed(undo):
            with contextlib.suppress(OSError):
                step()
        raise
    state.data["target"] = str(target.dir)
    if made:
        state.data[MADE_TARGET] = True
    state.file("settings")["base"] = ours_settings
    state.file("claude_json")["base"] = ours_mcp
    state.file("settings")["path"] = str(target.settings)
    state.file("claude_json")["path"] = str(target.claude_json)
    if outcome.changes or not (target.state_dir / STATE_FILE).exists():
        state.save()
    return outcome


def _apply(
    state: State,
    key: str,
    loaded: Loaded,
    new_doc: dict[str, Any],
    ours: dict[str, Any],
    base: dict[str, Any],
    owns: Callable[[str], bool],
    outcome: Outcome,
    undo: list[Callable[[], None]],
) -> None:
    state.remember_original(key, loaded.raw)
    written, backup = verified_write(state, loaded, new_doc, merge.deep_union(base, ours), owns)
    state.file(key)["written_sha256"] = _sha(written)
    if backup:
        outcome.backups.append(str(backup))
    action = "create" if loaded.raw is None else "write"
    outcome.changes.append(Change(str(loaded.path), action, unified_diff(loaded.path, loaded.raw, written)))
    raw, path, mode = loaded.raw, loaded.path, loaded.mode
    undo.append(lambda: write_atomic(path, raw, mode) if raw is not None else os.unlink(path))


def _place_copy(
    state: State,
    target: Target,
    dest: Path,
    mode: int,
    data: bytes,
    outcome: Outcome,
    undo: list[Callable[[], None]],
) -> None:
    created = state.data.setdefault("created_dirs", [])
    missing = []
    folder = dest.parent
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        folder.mkdir(mode=0o755)
        rel = str(folder.relative_to(target.dir))
        if rel not in created:
            created.append(rel)
    if dest.is_symlink():
        raise InstallError(f"{dest} is a symlink; remove it, then run again")
    old = dest.read_bytes() if dest.exists() else None
    rel = str(dest.relative_to(target.dir))
    entry = state.data.setdefault("copies", {}).setdefault(rel, {})
    if "original" not in entry and old is not None and _sha(old) != entry.get("sha256"):
        entry["original"] = base64.b64encode(old).decode()
    write_atomic(dest, data, mode)
    entry["sha256"] = _sha(data)
    outcome.changes.append(Change(str(dest), "write" if old is not None else "create"))
    undo.append(lambda: write_atomic(dest, old, mode) if old is not None else os.unlink(dest))


def uninstall(target: Target, spool_root: Path, purge: bool = False) -> Outcome:
    with target_lock(target):
        outcome = _uninstall(target, spool_root)
    if purge:
        outcome.purged = purge_spool(spool_root)
    return outcome


def _uninstall(target: Target, spool_root: Path) -> Outcome:
    owns = target.owns
    state = State.load(target.state_dir)
    loaded = {"settings": load_json(target.settings), "claude_json": load_json(target.claude_json)}
    # Without a record, withdraw what the current baseline (and the guard wiring) would have written.
    fallback = {
        "settings": merge.deep_union(settings_baseline(target), guard_wiring(target)),
        "claude_json": mcp_baseline("attend"),
    }
    outcome = Outcome(str(target.dir), str(target.settings), str(target.claude_json), [], [], str(spool_root))
    for key, file in loaded.items():
        if file.raw is None:
            continue
        base = merge.deep_union(fallback[key], state.file(key).get("base", {}) if state.exists else {})
        recorded, original = state.original(key)
        unchanged_since = state.exists and _sha(file.raw) == state.file(key).get("written_sha256")
        if recorded and unchanged_since and _same_user_part(original, file.doc, base, owns):
            # Nothing else wrote the file since attend did, and the user's part of it is what it was
            # before attend first wrote (a reinstall may have merged a later edit in): put back
            # exactly what was there.
            backup = state.backup(file.path, file.raw)
            if original is None:
                os.unlink(file.path)
            else:
                write_atomic(file.path, original, file.mode)
            action = "remove" if original is None else "restore"  # install created it
            outcome.changes.append(Change(str(file.path), action, unified_diff(file.path, file.raw, original)))
            if backup:
                outcome.backups.append(str(backup))
            continue
        stripped = merge.strip(file.doc, base, owns)
        if stripped == file.doc:
            continue
        written, backup = verified_write(state, file, stripped, base, owns)
        if backup:
            outcome.backups.append(str(backup))
        outcome.changes.append(Change(str(file.path), "write", unified_diff(file.path, file.raw, written)))
    withdraw_copies(state, target, copies(target), outcome)
    remove_made_target(state, target, outcome)
    state.forget()
    return outcome


def withdraw_copies(state: State, target: Target, placed: list[tuple[Path, Path, int]], outcome: Outcome) -> None:
    """Put back what a copy replaced (as recorded), remove what install created, and the folders it
    made when they are empty again."""
    recorded_copies: dict[str, Any] = state.data.get("copies", {}) if state.exists else {}
    for _, dest, mode in placed:
        rel = str(dest.relative_to(target.dir))
        if not dest.is_file() or dest.is_symlink():
            continue
        original_b64 = recorded_copies.get(rel, {}).get("original")
        if original_b64:
            write_atomic(dest, base64.b64decode(original_b64), mode)
            outcome.changes.append(Change(str(dest), "restore"))
        else:
            os.unlink(dest)
            outcome.changes.append(Change(str(dest), "remove"))
    for rel in sorted(state.data.get("created_dirs", []), key=len, reverse=True):
        with contextlib.suppress(OSError):  # not empty: the user put something there
            os.rmdir(target.dir / rel)


def remove_made_target(state: State, target: Target, outcome: Outcome) -> None:
    """The target folder, when install made it and nothing else was put there since."""
    if not state.data.get(MADE_TARGET):
        return
    with contextlib.suppress(OSError):  # not empty: the client (or the user) put something there
        os.rmdir(target.dir)
        outcome.changes.append(Change(str(target.dir), "remove"))


def _same_user_part(
    original: bytes | None, doc: dict[str, Any], base: dict[str, Any], owns: Callable[[str], bool]
) -> bool:
    try:
        before = safejson.loads(original) if original and original.strip() else {}
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(before, dict) and merge.same_user_view(before, doc, base, owns)


def purge_spool(root: Path) -> bool:
    if root.is_symlink():
        raise UsageError(f"the spool {root} is a symlink; remove it by hand if you mean to")
    if not root.exists():
        return False
    shutil.rmtree(root)
    return True
