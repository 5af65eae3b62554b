"""What the user's approval of a project's script sensors pins: the bytes that run.

A project's ``.claude/attend.yaml`` needs no approval to exist, and any session of the user can write
to the project, so an approval of its script sensors (``attend sensors trust``) records, per project
file, in ``~/.config/attend/trusted.json``:

- the SHA-256 of the file's text (its intervals and timeouts, as before);
- for each script sensor it defines, the exact argv, and the SHA-256 of every file inside the
  project that the argv names: the program itself, an interpreter's script argument
  (``sh tools/ci``), each word of a script given as text (``sh -c './tools/ci --fast'``, split as a
  shell splits words), the module ``-m`` runs (``python3 -m tools.ci``: ``tools/ci.py``, or a
  package's ``__init__.py`` and ``__main__.py``, with each parent package's ``__init__.py``), and any
  other word that names a project file; each read through a link to its target.

Before each run the loop pins the sensor again and compares: a changed, added or missing file, or a
changed argv, makes the sensor untrusted again, with one line that says which. The program is a
command on PATH or a file inside the project; a path outside the project, or a project file that
others (group or world) may write, is refused, at approval and at every run. The check and the start
are two steps (the program is then opened again by its path): a process that writes the project in
that window, milliseconds, is not caught; closing it would change the script's own path
(docs/architecture/sensors.md, "The window between the check and the start").

Approvals written before the bytes were pinned (a bare digest of the file's text) pin no program,
so they no longer count: such a project needs ``attend sensors trust`` again. An approval written
before ``-c`` scripts and ``-m`` modules were read (no ``pinning`` mark) still counts while the files
pinned now are the ones it pinned; a file it did not pin is named in the one line that asks again.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass

from attend import layout, safejson
from attend.domain.settings import config
from attend.domain.settings.config import SensorSetting
from attend.errors import AttendError

TRUST_FILE = config.TRUST_FILE
APPROVE = "attend sensors trust"
PINNING = 2  # what an approval's pins cover: 2 adds the words of a -c script and the module of -m
# Set for a project's script: Python then reads and writes its bytecode cache under a path that can
# never be a folder, so it compiles the pinned source instead of a `__pycache__` file planted beside
# it (a .pyc whose header matches the source's size and mtime is otherwise run in its place).
NO_BYTECODE = "PYTHONPYCACHEPREFIX=/dev/null/attend-no-bytecode"
# Python's options that take no argument, which may share a word with -m (``-Im tools.ci``).
_MODULE_FLAG = re.compile(r"-[bBdEhiIOPqsSuvVx]*m(.*)")
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


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


def _shell_words(text: str) -> list[str]:
    """The words of a script given as text (``sh -c``'s, or an interpreter's code), split as a shell
    splits them, operators apart (``;``, ``|``, ``&&``, ``$(``); text that does not split (an
    unbalanced quote in Python code) is cut at blanks, quotes and operators instead. Each
    ``name=value`` gives its value too. Too many words is never a reason to pin fewer: any word may
    name a file."""
    import shlex

    text = text.replace("`", " ")
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""  # a file named after a `#` is pinned too: more pinned is never less safe
        words = list(lexer)
    except ValueError:
        words = re.split(r"[\s;|&()<>'\"$]+", text)
    return [*words, *(w.split("=", 1)[1] for w in words if "=" in w)]


def _module_files(module: str, root: str) -> list[str]:
    """The project files ``python -m module`` runs when the project (its working folder, first on
    ``sys.path``) holds the module: each package's ``__init__.py`` on the way, then the module's file,
    or a package's ``__init__.py`` and ``__main__.py``. Nothing when the module is not the project's."""
    if not _MODULE.fullmatch(module):
        return []
    parts = module.split(".")
    out = [os.path.join(*parts[:i], "__init__.py") for i in range(1, len(parts))]
    leaf = os.path.join(*parts)
    if os.path.isfile(os.path.join(root, leaf + ".py")):
        out.append(leaf + ".py")
    else:
        out += [os.path.join(leaf, "__init__.py"), os.path.join(leaf, "__main__.py")]
    return [f for f in out if os.path.lexists(os.path.join(root, f))]


def _named(argv: tuple[str, ...]) -> list[str]:
    """Every word after the program that may name a project file: the words themselves, each word's
    shell words (a ``-c`` script is one word), and the files of a module named after ``-m``."""
    out: list[str] = []
    module_next = False
    for word in argv[1:]:
        if module_next:
            out.append(f"-m {word}")
            module_next = False
        elif flag := _MODULE_FLAG.fullmatch(word):
            if flag.group(1):
                out.append(f"-m {flag.group(1)}")  # -mtools.ci
            else:
                module_next = True
            continue
        out += [word, *_shell_words(word)]
    return list(dict.fromkeys(out))


def _ignores_environment(argv: tuple[str, ...]) -> bool:
    """Whether Python's options up to ``-m`` include ``-E`` (alone, or in a word such as ``-BEm``)."""
    for word in argv[1:]:
        if flag := _MODULE_FLAG.fullmatch(word):
            return "E" in word[: len(word) - len(flag.group(1))]
        if re.fullmatch(r"-[bBdhiIOPqsSuvVx]*E[bBdEhiIOPqsSuvVx]*", word):
            return True
    return False


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
    for word in _named(argv):
        if word.startswith("-m "):  # a module: its files must be the project's, as a program's are
            modules = _module_files(word[3:], root)
            if modules and _ignores_environment(argv):
                raise Refused(
                    f"{' '.join(argv[:2])}: -E makes Python ignore {NO_BYTECODE.split('=')[0]}, so a bytecode "
                    f"cache planted beside {modules[-1]} could run instead of it; drop -E"
                )
            for rel in modules:
                if found := _pin_one(rel, root, program=True):
                    files[found[0]] = found[1]
        elif word and not word.startswith("-") and (found := _pin_one(word, root, program=False)):
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
    older = approved.get("pinning") != PINNING  # approved before -c scripts and -m modules were read
    for name in sorted(set(before) | set(now.files)):
        if before.get(name) != now.files.get(name):
            if name not in before and older:
                return f"attend now also pins {name}, which its command runs and the approval predates; {again}"
            what = "is new" if name not in before else "is gone" if name not in now.files else "changed"
            return f"{name} {what} since it was approved; {again}"
    return None


def approve(env: Mapping[str, str], file: str, config_sha: str, settings: list[SensorSetting]) -> dict[str, Pins]:
    """Record the approval of ``file`` as it is now: its text, and each script sensor's argv and
    files. Refused (nothing written) when any of them cannot be approved."""
    pins = {s.name: pin(s, env) for s in settings if s.script is not None and s.source == file}
    approvals = _approvals(env)
    sensors = {name: {**p.as_json(), "pinning": PINNING} for name, p in sorted(pins.items())}
    approvals[file] = {"config": config_sha, "sensors": sensors}
    config.write_atomically(config.trust_path(env), json.dumps(approvals, indent=1, sort_keys=True) + "\n")
    return pins
