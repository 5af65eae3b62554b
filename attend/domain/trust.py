"""What the user's approval of a project's script sensors pins: the bytes that run.

A project's ``.claude/attend.yaml`` needs no approval to exist, and any session of the user can write
to the project, so an approval of its script sensors (``attend sensors trust``) records, per project
file, in ``~/.config/attend/trusted.json``:

- the SHA-256 of the file's text (its intervals and timeouts, as before);
- for each script sensor it defines, the exact argv, and the SHA-256 of every file inside the
  project that the argv names: the program itself, an interpreter's script argument
  (``sh tools/ci``), any other word that names a project file, each read through a link to its target.

Before each run the loop pins the sensor again and compares: a changed, added or missing file, or a
changed argv, makes the sensor untrusted again, with one line that says which. The program is a
command on PATH or a file inside the project; a path outside the project, or a project file that
others (group or world) may write, is refused, at approval and at every run.

Approvals written before the bytes were pinned (a bare digest of the file's text) pin no program,
so they no longer count: such a project needs ``attend sensors trust`` again.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass

from attend import layout, safejson
from attend.domain import config
from attend.domain.config import SensorSetting
from attend.errors import AttendError

TRUST_FILE = config.TRUST_FILE
APPROVE = "attend sensors trust"


class Refused(AttendError):
    """A script sensor whose program or files cannot be approved (outside the project, writable by others)."""


@dataclass(frozen=True)
class Pins:
    argv: tuple[str, ...]
    files: dict[str, str]  # each project file the argv names, as named (relative to the project) -> sha256

    def as_json(self) -> dict[str, object]:
        return {"argv": list(self.argv), "files": dict(sorted(self.files.items()))}


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _digest_file(path: str) -> str:
    """The SHA-256 of a regular file's bytes (a FIFO or a device planted at the name is refused,
    never read)."""
    from hashlib import sha256  # only a project with a script sensor gets here

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{path} is not a regular file")
        h = sha256()
        while chunk := os.read(fd, 1 << 16):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


def _pin_one(named: str, root: str, program: bool) -> tuple[str, str] | None:
    """(the name relative to the project, sha256) for a project file; None for a word that names no
    file inside the project. ``program``: argv[0], which must be a project file."""
    real_root = os.path.realpath(root)
    lexical = os.path.normpath(os.path.join(root, named))
    real = os.path.realpath(lexical)
    inside = _inside(lexical, os.path.normpath(root)) or _inside(real, real_root)
    try:
        st = os.stat(real)
    except OSError:
        if program:
            raise Refused(f"{named} is not a file") from None
        return None
    if not stat.S_ISREG(st.st_mode):
        if program:
            raise Refused(f"{named} is not a regular file")
        return None
    if program and not _inside(real, real_root):
        raise Refused(
            f"{named} is outside the project ({real}): a script sensor runs a command on PATH or a project file"
        )
    if not inside:
        return None  # a word naming a file elsewhere (/etc/hosts as an argument): data, not the program
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise Refused(f"{named} is writable by others (mode {stat.S_IMODE(st.st_mode):o}): chmod go-w {named}")
    rel = os.path.relpath(lexical, os.path.normpath(root))
    return rel, _digest_file(real)


def pin(setting: SensorSetting, env: Mapping[str, str]) -> Pins:
    """The argv and the digests of the project files it names; Refused when it cannot be approved."""
    import shutil

    assert setting.script is not None
    root = setting.base  # the project (a project file's sensor runs in it)
    argv = setting.script
    files: dict[str, str] = {}
    first = argv[0]
    if "/" in first:
        found = _pin_one(first, root, program=True)
    else:  # a command on PATH: the system's, unless PATH leads into the project
        on_path = shutil.which(first, path=env.get("PATH") or os.defpath)
        found = _pin_one(on_path, root, program=False) if on_path else None
    if found:
        files[found[0]] = found[1]
    for word in argv[1:]:
        if word and not word.startswith("-") and (found := _pin_one(word, root, program=False)):
            files[found[0]] = found[1]
    return Pins(tuple(argv), files)


def _approvals(env: Mapping[str, str] | None) -> dict[str, object]:
    try:
        with open(os.path.join(layout.config_root(env), TRUST_FILE), encoding="utf-8") as f:
            data = safejson.loads(f.read())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def verdict(env: Mapping[str, str], setting: SensorSetting, config_sha: str) -> str | None:
    """None when this sensor may run as it is now; else why not, as one line."""
    if not setting.project:
        return None  # the user's own config: the user wrote it
    approval = _approvals(env).get(setting.source)
    again = f"approve {setting.source} with: {APPROVE}"
    if approval is None:
        return again
    if not isinstance(approval, dict):
        return f"approved before attend pinned the script's bytes; {again}"
    if approval.get("config") != config_sha:
        return f"{setting.source} changed since it was approved; {again}"
    sensors = approval.get("sensors")
    approved = sensors.get(setting.name) if isinstance(sensors, dict) else None
    if not isinstance(approved, dict):
        return again
    try:
        now = pin(setting, env)
    except (Refused, OSError) as e:
        return f"{e}; not run"
    if list(now.argv) != approved.get("argv"):
        return f"its command changed since it was approved; {again}"
    before = approved.get("files") if isinstance(approved.get("files"), dict) else {}
    assert isinstance(before, dict)
    for name in sorted(set(before) | set(now.files)):
        if before.get(name) != now.files.get(name):
            what = "is new" if name not in before else "is gone" if name not in now.files else "changed"
            return f"{name} {what} since it was approved; {again}"
    return None


def approve(env: Mapping[str, str], file: str, config_sha: str, settings: list[SensorSetting]) -> dict[str, Pins]:
    """Record the approval of ``file`` as it is now: its text, and each script sensor's argv and
    files. Refused (nothing written) when any of them cannot be approved."""
    pins = {s.name: pin(s, env) for s in settings if s.script is not None and s.source == file}
    approvals = _approvals(env)
    approvals[file] = {"config": config_sha, "sensors": {name: p.as_json() for name, p in sorted(pins.items())}}
    config.write_atomically(config.trust_path(env), json.dumps(approvals, indent=1, sort_keys=True) + "\n")
    return pins
