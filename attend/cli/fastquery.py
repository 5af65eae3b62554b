"""`attend peers` and `attend status` without click: the two read-only commands run most, whose
process start would otherwise be mostly click's import (about three interpreter starts).

Only the exact command lines ``peers`` (with ``--json``, ``--utc``, both or neither) and ``status`` (with
or without ``--json``) come here (as ``attend.cli.entry`` routes them); anything else goes to click, which
also parses these for `--help`.
The tables are drawn here for both frontends.
"""

from __future__ import annotations

import sys

from attend.cli.render import table, when

TYPE_CHECKING = False  # typing costs ~3 ms to import on the hot paths; mypy reads this as true
if TYPE_CHECKING:
    from typing import TextIO

    from attend.verbs.peers import Peers
    from attend.verbs.status import Status

COMMANDS = ("peers", "status")


def wants(args: list[str]) -> bool:
    """``args``: the command line after ``attend``."""
    flags = args[1:]
    if args[:1] == ["peers"]:  # the one of the two that shows a time (a human's last activity)
        return len(set(flags)) == len(flags) and set(flags) <= {"--json", "--utc"}
    return args[:1] == ["status"] and flags in ([], ["--json"])


def run(args: list[str], out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    from attend.cli import render
    from attend.domain.sessions.context import REPORTED, Context
    from attend.errors import AttendError

    as_json, utc = "--json" in args[1:], "--utc" in args[1:]
    try:
        if args[0] == "peers":
            from attend.verbs import peers

            result: Peers | Status = peers.run(Context.default(), peers.PeersRequest())
        else:
            from attend.verbs import status

            result = status.run(Context.default(), status.StatusRequest())
    except AttendError as e:
        return render.refused(e, as_json, out, err)
    if as_json:
        out.write(render.document_line(result))
        return 0
    out.write((peers_text(result, utc) if args[0] == "peers" else status_text(result)) + "\n")  # type: ignore[arg-type]
    for warning in result.warnings:
        if warning not in REPORTED:  # an identity note, already said once when the caller was resolved
            err.write(f"attend: warning: {warning}\n")
    return 0


def peers_text(result: Peers, utc: bool = False) -> str:
    if not result.peers and not result.humans:
        return "no live sessions"
    rows = [
        [
            p.display
            + (f"@{p.host}" if p.host else "")
            + (" (you)" if p.self else "")
            + ("" if p.enrolled else " (not joined)"),
            p.client,
            p.project,
            p.status,
            "-" if p.ctx is None else f"{p.ctx}%",
            ", ".join(p.channels) or "-",
            ("sensor " if p.sensor else "") + ("mcp" if p.mcp else "") or "-",
        ]
        for p in result.peers
    ]
    rows += [
        [
            h.user + (f"@{h.host}" if h.host else "") + " (human" + (", you)" if h.self else ")"),
            "-",
            "-",
            f"active {when(h.active_at, utc)}",  # the reader's local time, zone named, as inbox shows times
            "-",
            ", ".join(h.channels) or "-",
            "-",
        ]
        for h in result.humans
    ]
    return table(rows, ["Peer", "Client", "Project", "Status", "Ctx", "Channels", "Conduits"]) + leases_text(result)


def leases_text(result: Peers) -> str:
    """Who holds what, under the table (nothing when no lease is held)."""
    lines = [
        f"  {x.holder} holds {x.glob}" + (" (shared)" if x.shared else "") + (f": {x.reason}" if x.reason else "")
        for x in result.leases
    ]
    return "\n\nleases (attend leases):\n" + "\n".join(lines) if lines else ""


def status_text(s: Status) -> str:
    yes = {True: "yes", False: "no"}
    wired = s.conduits.waiter_wired
    rows = [
        ["spool", s.spool],
        ["session", s.session_id],
        ["kind", s.kind],
        ["client", s.client or "-"],
        ["origin", s.origin_path],
        ["resolved", f"{yes[s.resolved]} ({s.resolved_by})"],
        ["display", s.display],
        ["enrolled", f"yes ({', '.join(s.ways)})" if s.enrolled else "no"],
        ["pending", str(s.pending)],
        ["sensor loop", yes[s.conduits.sensor]],
        ["drain", yes[s.conduits.drain]],
        ["waiter", ("waiting" if s.conduits.waiter else "not waiting") + (" (wired)" if wired else " (not wired)")],
        ["mcp", yes[s.conduits.mcp]],
        ["socket", yes[s.conduits.socket]],
        ["serving", s.conduits.serving or "-"],
        *[
            ["conduits" if i == 0 else "", f"{c.conduit}: {'serves' if c.serves else 'no'} ({c.why})"]
            for i, c in enumerate(s.conduits.serves)
        ],
        ["channels", ", ".join(s.channels) or "-"],
        ["muted", ", ".join(s.mutes) or "-"],
    ]
    return table(rows)
