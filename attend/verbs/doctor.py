"""doctor: one screen on why this session would not receive, each check with its fix.

It runs the repair pass (the one write it makes): links this session should have and lacks are
restored, as the sensor loop does on start.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field

from attend import identity
from attend.domain import delivery, mcp_markers, sessions
from attend.domain.context import Context, enrollment_probe
from attend.errors import AttendError
from attend.identity import Identity
from attend.spool import Spool
from attend.verbs import permissions

DESCRIPTION = (
    "Explain why a session would not receive: attend on the hook's PATH, the wiring, the MCP marker, the "
    "sensor loop, enrollment, spool permissions and Monitor availability, each with its fix. Runs the "
    "repair pass and says how many deliveries it restored. Exits 1 when a check fails."
)
PARAMS: dict[str, str] = {"target": permissions.PARAMS["target"]}

# Either variable turns off the client's non-essential traffic, and with it, on some versions, Monitor.
MONITOR_OFF = ("DISABLE_TELEMETRY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")


@dataclass(frozen=True)
class DoctorRequest:
    target: str | None = None


@dataclass
class Check:
    name: str
    status: str  # "ok" | "warn" | "fail" | "skip"
    detail: str
    fix: str = ""


@dataclass
class Doctor:
    session_id: str
    kind: str
    checks: list[Check]
    repaired: int
    ok: bool
    warnings: list[str] = field(default_factory=list)


def _path_check(env: Mapping[str, str]) -> Check:
    found = shutil.which("attend", path=env.get("PATH"))
    if found:
        return Check("attend on PATH", "ok", found)
    return Check(
        "attend on PATH",
        "fail",
        "the Stop hook runs `attend` from the client's PATH, and it is not there (the drain then does nothing)",
        "install attend where that PATH finds it (e.g. `pipx install attend`), or add its folder to PATH "
        "before starting claude",
    )


def _wiring(ctx: Context, target: str | None) -> Check:
    try:
        p = permissions.run(ctx, permissions.PermissionsRequest(target))
    except AttendError as e:
        # `attend install` refuses a missing target too: point at what unblocks it.
        return Check("wiring", "fail", str(e), "create that folder (or set CLAUDE_CONFIG_DIR), then `attend install`")
    unreadable = [w for w in p.warnings if w.startswith("cannot read") or "is not a JSON object" in w]
    if unreadable:
        fix = "repair that file (it must be a JSON object), then `attend install`"
        return Check("wiring", "fail", unreadable[0], fix)
    gaps = [name for name, ok in (("Stop-hook drain", p.stop_hook), ("MCP server", p.mcp_server)) if not ok]
    if p.missing:
        gaps.append("allow entries " + ", ".join(p.missing))
    if gaps:
        return Check("wiring", "fail", f"{p.target}: missing " + "; ".join(gaps), "run `attend install`")
    guard = "guard wired" if p.guard else "guard not wired"
    return Check("wiring", "ok", f"{p.target}: drain, MCP server, allow entries; {guard}; gate {p.gate}")


def run(ctx: Context, req: DoctorRequest) -> Doctor:
    """Works without a spool: a context from ``Context.for_env`` opens it here, and a refusal is a check."""
    env, pid = ctx.env, ctx.pid
    checks = [_path_check(env), _wiring(ctx, req.target)]
    spool: Spool | None = None
    try:
        spool = ctx.spool
        checks.append(Check("spool", "ok", str(spool.root)))
    except AttendError as e:
        checks.append(Check("spool", "fail", str(e), "fix the spool folder as the message says"))
    try:
        who: Identity | None = identity.resolve(env=env, pid=pid, enrollment=enrollment_probe(spool))
    except AttendError as e:
        who = None
        checks.append(Check("identity", "fail", str(e)))
    repaired = 0
    if who is None or not who.is_agent or spool is None:
        why = "not inside a Claude Code session" if who is not None else "identity unresolved"
        for name in ("MCP marker", "sensor loop", "enrollment", "repair"):
            checks.append(Check(name, "skip", why))
    else:
        sid = who.id
        mcp = mcp_markers.mcp_live(spool, sid)
        checks.append(
            Check("MCP marker", "ok", "attend mcp is connected")
            if mcp
            else Check(
                "MCP marker",
                "warn",
                "no live `attend mcp` for this session; the CLI verbs still work",
                "run `attend install`, then restart the session so the client starts the server",
            )
        )
        sensor = sessions.run_is_live(spool, sid)
        checks.append(
            Check("sensor loop", "ok", "attend run is live")
            if sensor
            else Check(
                "sensor loop",
                "warn",
                "no `attend run`: an idle session is not woken (the Stop-hook drain still delivers at turn end)",
                "arm it with the Monitor tool: command `attend run`, timeout_ms 600000",
            )
        )
        if sessions.is_enrolled(spool, sid):
            checks.append(Check("enrollment", "ok", "enrolled: fan-out and the drain serve this session"))
        else:
            checks.append(
                Check(
                    "enrollment",
                    "fail",
                    "not enrolled: nothing is delivered to this session",
                    "arm `attend run` under Monitor, or `attend join <channel>`",
                )
            )
        repaired = delivery.repair(spool, sid)
        checks.append(Check("repair", "ok", f"restored {repaired} missing deliveries"))
    off = [name for name in MONITOR_OFF if env.get(name)]
    checks.append(
        Check(
            "Monitor",
            "warn",
            f"{', '.join(off)} set: the client may not offer the Monitor tool, so `attend run` cannot be armed",
            f"unset {' and '.join(off)} for Claude Code; until then the Stop-hook drain delivers at turn end",
        )
        if off
        else Check("Monitor", "ok", "nothing in the environment disables it")
    )
    return Doctor(
        session_id=who.id if who else "",
        kind=who.kind if who else "",
        checks=checks,
        repaired=repaired,
        ok=all(c.status != "fail" for c in checks),
    )
