"""The working tree a lease is about: its root, a glob or a path made root-relative (symlinks
resolved), the files staged for a commit, and the pre-commit hook ``attend install --git-hook`` adds.

It reads and writes files of the user's project, never the spool, so it never imports the gate
(tests/test_layers.py). Standard library only: the pre-tool hook's fast path imports it.
"""

from __future__ import annotations

import os

from attend.leases import globs

GIT_TIMEOUT = 10.0  # seconds for `git diff --cached` (the commit guard fails open past it)


def project_root(cwd: str) -> str:
    """The root leases are relative to: the nearest folder at or above ``cwd`` holding ``.git`` (a
    folder, or a linked worktree's file: each worktree is a tree of its own), else ``cwd`` itself;
    symlinks resolved."""
    start = os.path.realpath(cwd)
    probe = start
    for _ in range(256):
        if os.path.lexists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return start


def resolve(path: str, base: str) -> str:
    """``path`` (absolute, or relative to ``base``) as the real path it names, every symlink resolved
    (a file not yet made resolves through its nearest existing folder)."""
    return os.path.realpath(os.path.join(base, os.path.expanduser(path)))


def normalise(glob: str, root: str) -> tuple[str | None, str]:
    """(the glob relative to ``root``, "") or (None, why it is refused). ``root`` is resolved."""
    text = glob.strip()
    if not text:
        return None, "an empty glob names nothing"
    if len(text) > globs.MAX_GLOB or any(c in text for c in "\0\n\r"):
        return None, "not a glob (too long, or a control character)"
    if os.path.isabs(text) or text.startswith("~"):
        absolute = os.path.normpath(os.path.expanduser(text))
        prefix = "/" + globs.literal_prefix(absolute)
        inside = globs.relative(os.path.realpath(prefix), root)
        if inside is None:
            return None, f"outside the project root {root}"
        tail = absolute[len(prefix) :].strip("/")
        text = "/".join(p for p in (inside, tail) if p) or "."
    parts = globs.fold(text.split("/"))
    if parts is None:
        return None, f"climbs out of the project root {root} (..)"
    if len(parts) > globs.MAX_SEGMENTS:
        return None, "too many segments"
    if any("**" in p and p != "**" for p in parts):
        return None, "** must be a whole segment (src/**/x.py, not src/**.py)"
    # Symlinks in the part that names real folders resolve, so a lease taken through a link covers
    # the file the link leads to, as an edit through either name is checked against the real path.
    fixed = globs.literal_prefix("/".join(parts))
    rest = parts[len(globs.segments(fixed)) :]
    if fixed:
        real = os.path.realpath(os.path.join(root, fixed))
        inside = globs.relative(real, root)
        if inside is None:
            return None, f"leads outside the project root {root} (a symlink)"
        parts = [*globs.segments(inside), *rest]
    return ("/".join(parts) or "**"), ""


def staged(root: str) -> list[str] | None:
    """The paths staged for the commit under way (relative to the repository's top), or None when
    git cannot say (not a repository, git missing, too slow): the guard then fails open."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "diff", "--cached", "--name-only", "-z", "--no-renames"],
            cwd=root,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return [p for p in done.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


# ---------------------------------------------------------------------- the pre-commit hook

HOOK_MARK = "# attend: the lease guard"
HOOK_LINE = "command -v {attend} >/dev/null 2>&1 || exit 0\n{attend} hook commit"
HOOK_TEXT = """#!/bin/sh
{mark} (attend install --git-hook): staged files under another live session's lease
# warn, or refuse the commit under leases.enforce: refuse. The hook that was here before runs first.
{previous}{line}
"""
PREVIOUS = "pre-commit.before-attend"


def git_dir(root: str) -> str | None:
    """The repository's hooks folder (a linked worktree's shared one), or None."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "rev-parse", "--git-path", "hooks"], cwd=root, capture_output=True, timeout=GIT_TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    hooks = done.stdout.decode().strip()
    return os.path.normpath(os.path.join(root, hooks)) if hooks else None


def install_git_hook(cwd: str, attend_exe: str) -> tuple[str, str]:
    """Add the guard to the repository's pre-commit hook, keeping one already there (it is moved
    beside it and run first). Returns (the hook's path, what was done). Raises ValueError outside a
    repository."""
    import shlex

    root = project_root(cwd)
    hooks = git_dir(root)
    if hooks is None:
        raise ValueError(f"{root} is not in a git repository; run attend install --git-hook inside one")
    os.makedirs(hooks, exist_ok=True)
    path = os.path.join(hooks, "pre-commit")
    previous = ""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            current = f.read()
    except FileNotFoundError:
        current = None
    if current is not None and HOOK_MARK in current:
        return path, "already there"
    done = "added"
    if current is not None:
        kept = os.path.join(hooks, PREVIOUS)
        os.replace(path, kept)
        previous = f'"$(dirname "$0")"/{PREVIOUS} "$@" || exit $?\n'
        done = f"added; the hook that was there runs first ({kept})"
    exe = shlex.quote(attend_exe) if os.path.isabs(attend_exe) else "attend"
    text = HOOK_TEXT.format(mark=HOOK_MARK, previous=previous, line=HOOK_LINE.format(attend=exe))
    tmp = path + ".attend-tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
    return path, done


# ---------------------------------------------------------------------- across hosts

REPO_KEY_MAX = 512


def repo_key(root: str) -> str | None:
    """What names a repository on every machine, for leases mirrored through the relay: its
    ``origin`` remote's URL (credentials and a trailing ``.git`` or ``/`` cut), else its first root
    commit; never the local path. None outside a repository, or when git cannot say."""
    import subprocess

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", "-C", root, *args], capture_output=True, timeout=GIT_TIMEOUT, check=False)
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else ""

    url = git("config", "--get", "remote.origin.url")
    if url:
        return "url:" + plain_url(url)[:REPO_KEY_MAX]
    first = git("rev-list", "--max-parents=0", "HEAD").splitlines()
    return f"root:{sorted(first)[0]}" if first else None


def plain_url(url: str) -> str:
    """A remote URL as two clones of one repository both name it: no user or password (never
    published), no trailing ``/`` or ``.git``; ``git@host:path`` kept as git writes it."""
    text = url.strip()
    scheme, sep, rest = text.partition("://")
    if sep:
        host, slash, path = rest.partition("/")
        host = host.rsplit("@", 1)[-1]
        text = f"{scheme.lower()}://{host.lower()}{slash}{path}"
    elif "@" in text.split(":", 1)[0]:
        text = text.split("@", 1)[1]  # git@host:path -> host:path
    text = text.rstrip("/")
    return text[: -len(".git")] if text.endswith(".git") else text
