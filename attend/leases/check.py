"""The check at the edit and at the commit (docs/architecture/leases.md), once the fast path found a
lease of another session over the edit (``attend.leases.fasthook``), or for every commit.

- ``attend hook edit``: the pre-tool hook. The holder's life is judged (``liveness.holder_live``), the
  caller's own leases never count (its id, or the host process a /clear left them under), and
  ``leases.enforce`` (config.yaml, or the project's overlay) decides: warn (the edit goes through and
  the model is told, in one line, who holds the file, why, and how to reach them) or refuse (the edit
  is refused with that line). The answer's shape is the caller's client's (``Host.edit_answer``).
- ``attend hook commit``: the pre-commit guard ``attend install --git-hook`` adds. The same lines for
  each staged file under another live session's lease, on stderr; exit 1 under refuse.

Both fail open: any failure is one line in the spool's log (and stderr), and exit 0. Neither writes
anything in the spool but that log line.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from typing import IO

from attend import layout as L
from attend import safejson
from attend.leases import globs, tree
from attend.leases.record import Holding, Lease

TYPE_CHECKING = False
if TYPE_CHECKING:
    from attend.spool import Spool


def holder_line(path: str, holding: Holding, lease: Lease) -> str:
    """The one line a model (or a committer) is told of a file under another session's lease. The
    holder's name and reason are another session's words: one line each, a name quoted unless plain,
    the reason in quotes (domain/core/framing.py), so neither can pass for attend's own framing."""
    from attend.domain.core import framing

    rel = framing.inline(globs.relative(path, lease.root) or path)
    name = framing.label(holding.name)
    client = f" ({framing.label(holding.client)})" if holding.client else ""
    why = f', reason "{framing.inline(lease.reason)}"' if lease.reason else ""
    reach = f"reach them with attend send --to {name} (attend leases lists all)"
    return f"attend: {rel} is leased by {name}{client}{why}; {reach}"


def _log(env: Mapping[str, str], line: str, err: IO[str]) -> None:
    with contextlib.suppress(Exception):
        err.write(line + "\n")
        from attend.spool import Spool

        Spool(L.default_root(env)).log(line)


def _caller(env: Mapping[str, str], claimed: str | None) -> tuple[str | None, int | None, str | None, str | None]:
    """(session id, host pid, procStart, host name) of the caller, by the authority rule; all None
    when no session is proved (its leases are then all others')."""
    from attend import identity
    from attend.errors import AttendError

    try:
        who = identity.authority(claimed=claimed, env=env, hook=claimed is not None)
    except AttendError:
        return claimed, None, None, None
    if not who.is_agent:
        return None, None, None, None
    return who.id, who.claude_pid, who.proc_start, who.host


def hits(paths: list[str], env: Mapping[str, str], claimed: str | None) -> tuple[list[str], str | None, str | None]:
    """(one line per path under another live session's lease, the root of the first, the caller's host)."""
    from attend.leases.store import live_holdings, same_process
    from attend.spool import Spool

    sid, pid, start, host = _caller(env, claimed)
    spool = Spool(L.default_root(env))
    lines: list[str] = []
    root: str | None = None
    for holding in live_holdings(spool):
        if holding.sid == sid or same_process(holding, pid, start):
            continue
        for path in paths:
            lease = next((x for x in holding.leases if x.covers(path)), None)
            if lease is not None:
                lines.append(holder_line(path, holding, lease))
                root = root or lease.root
    lines += remote_lines(spool, paths)
    return lines, root, host


def remote_lines(spool: Spool, paths: list[str]) -> list[str]:
    """One line per path under another host's lease, matched by the repository (never the path)."""
    from attend.domain.core import framing
    from attend.domain.messages import remote

    theirs = remote.leases(spool)
    if not theirs:
        return []
    keys: dict[str, str | None] = {}
    lines = []
    for path in paths:
        root = tree.project_root(os.path.dirname(path))
        if root not in keys:
            keys[root] = tree.repo_key(root)
        rel = globs.relative(path, root)
        if keys[root] is None or rel is None:
            continue
        lease = next((x for x in theirs if x.repo == keys[root] and globs.matches(x.glob, rel)), None)
        if lease is not None:
            name = framing.label(lease.address)
            client = f" ({framing.label(lease.client)})" if lease.client else ""
            why = f', reason "{framing.inline(lease.reason)}"' if lease.reason else ""
            reach = f"reach them with attend send --to {name} (attend leases lists all)"
            lines.append(f"attend: {framing.inline(rel)} is leased on {lease.host} by {name}{client}{why}; {reach}")
    return lines


def refusing(env: Mapping[str, str], root: str | None) -> bool:
    from attend.domain.settings import config

    return config.load(env, project=root).get("leases.enforce") == "refuse"


def edit_main(data: bytes, env: Mapping[str, str], out: IO[str], err: IO[str]) -> int:
    try:
        from attend import hosts
        from attend.leases.fasthook import edit_paths

        payload = safejson.loads(data or b"{}")
        if not isinstance(payload, dict):
            return 0
        paths = edit_paths(payload)
        sid = payload.get("session_id")
        lines, root, host = hits(paths, env, sid if isinstance(sid, str) and L.is_session_id(sid) else None)
        if not lines:
            return 0
        refuse = refusing(env, root)
        event = str(payload.get("hook_event_name") or "PreToolUse")
        line = " ".join(lines[:3]) + (f" (and {len(lines) - 3} more)" if len(lines) > 3 else "")
        mine = hosts.by_name(host)
        for candidate in [mine] if mine is not None else list(hosts.HOSTS):
            if candidate is None:
                continue
            answer = candidate.edit_answer(event, line, refuse)
            if answer is not None:
                out.write(json.dumps(answer, ensure_ascii=False) + "\n")
                break
    except Exception as e:  # fail open: the edit goes through
        _log(env, f"attend: the lease check failed open ({type(e).__name__}: {e})", err)
    return 0


def commit_main(env: Mapping[str, str], err: IO[str], cwd: str | None = None) -> int:
    try:
        root = tree.project_root(cwd or os.getcwd())
        names = tree.staged(root)
        if not names:
            return 0
        paths = [tree.resolve(n, root) for n in names]
        lines, lease_root, _host = hits(paths, env, None)
        if not lines:
            return 0
        refuse = refusing(env, lease_root or root)
        for line in lines:
            err.write(line + "\n")
        if refuse:
            err.write(
                "attend: commit refused (leases.enforce: refuse); ask the holders, or wait for their sessions to end\n"
            )
            return 1
        err.write("attend: committing anyway (leases.enforce: warn)\n")
    except Exception as e:  # fail open: the commit goes through
        _log(env, f"attend: the commit's lease check failed open ({type(e).__name__}: {e})", err)
    return 0
