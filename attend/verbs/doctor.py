"""doctor: one screen on why this session would not receive, each check with its fix.

It runs the repair pass (the one write it makes): links this session should have and lacks are
restored, as the sensor loop does on start.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field

from attend import identity, safejson
from attend.conduits import inbox_socket, waiter
from attend.domain.messages import delivery
from attend.domain.sessions import mcp_markers, sessions
from attend.domain.sessions.context import Context, enrollment_probe
from attend.errors import AttendError
from attend.identity import Identity
from attend.layout import OUTBOX, RELAY, RELAY_LOCK, RELAY_ON, RELAY_STATE
from attend.setup import install
from attend.spool import Spool
from attend.verbs import permissions

DESCRIPTION = (
    "Explain why a session would not receive: attend on PATH, the wiring, which attend the Stop hook runs, "
    "each Codex CLI or Gemini CLI configuration attend wired or found (its MCP server, hooks and hook trust), "
    "the MCP marker, the sensor loop, enrollment, spool permissions and Monitor availability, each with what "
    "it found and the one command that fixes it. Runs the repair pass and says how many deliveries it "
    "restored. Exits 1 when a check fails."
)
EXAMPLES = (  # the end of `attend doctor --help` (CLI only)
    ("attend doctor", "why a session would not receive, and the fix"),
    ("attend doctor --json", "the same, for a script"),
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
    detail: str  # what was found
    fix: str = ""  # the one command that fixes it (a sentence where no command does)


@dataclass
class Doctor:
    session_id: str
    kind: str
    checks: list[Check]
    repaired: int
    ok: bool
    warnings: list[str] = field(default_factory=list)


def attend_command(env: Mapping[str, str]) -> str:
    """How to name the running attend in a fix: ``attend`` when PATH finds this very one, else its path."""
    exe = install.attend_executable(env)
    found = shutil.which("attend", path=env.get("PATH"))
    if found and os.path.realpath(found) == os.path.realpath(exe):
        return "attend"
    return shlex.quote(exe)


def _install_command(env: Mapping[str, str], target: str | None) -> str:
    where = f" --target {shlex.quote(target)}" if target else ""
    return f"{attend_command(env)} install{where}"


def _link_command(env: Mapping[str, str]) -> str:
    """One command that puts the running attend on PATH: a link in a PATH folder of the user's; else
    in ~/.local/bin, with that folder added to PATH for new login shells."""
    exe = shlex.quote(install.attend_executable(env))
    folder = install.user_path_folder(env)
    if folder:
        return f"ln -s {exe} {shlex.quote(os.path.join(folder, 'attend'))}"
    return (
        f"mkdir -p ~/.local/bin && ln -s {exe} ~/.local/bin/attend && "
        """echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.profile"""
    )


def _path_check(env: Mapping[str, str]) -> Check:
    found = shutil.which("attend", path=env.get("PATH"))
    if found:
        return Check("attend on PATH", "ok", found)
    return Check(
        "attend on PATH",
        "warn",
        "not on PATH, so the Monitor command `attend run` and the Bash verbs the skill teaches cannot start "
        "(the Stop hook and the MCP server run the path `attend install` recorded)",
        _link_command(env),
    )


def _hook_check(env: Mapping[str, str], target: str | None) -> Check:
    """Which attend the installed Stop hook runs: the path install recorded, else PATH's."""
    name = "Stop hook finds attend"
    try:
        where = install.resolve_target(target, env)
    except AttendError:
        return Check(name, "skip", "no target folder (see wiring)")
    script = where.hooks_dir / install.DRAIN_SCRIPT
    if not install.is_installed(script):
        return Check(name, "skip", f"{script} is not installed (see wiring)")
    recorded = install.recorded_attend(where)
    if recorded and install.is_executable(recorded):
        return Check(name, "ok", f"{script} runs {recorded}")
    fix = _install_command(env, target)
    if recorded:
        what = f"{script} runs {recorded}, which is gone (a removed or moved install)"
    else:
        what = f"{script} records no attend path, so it runs `attend` from the client's PATH"
    if shutil.which("attend", path=env.get("PATH")) and not recorded:
        return Check(name, "warn", f"{what}; found on this PATH, perhaps not on the client's", fix)
    return Check(name, "fail", f"{what}; the drain delivers nothing at turn end", fix)


def _wiring(ctx: Context, target: str | None) -> Check:
    try:
        p = permissions.run(ctx, permissions.PermissionsRequest(target))
    except AttendError as e:
        # `attend install` refuses a missing target too: point at what unblocks it.
        folder = install.requested_folder(target, ctx.env)
        return Check("wiring", "fail", str(e), f"mkdir -p {shlex.quote(folder)} && {_install_command(ctx.env, target)}")
    if not p.primary:
        return Check("wiring", "skip", f"{p.target} does not exist: not used here (the other clients are below)")
    unreadable = [w for w in p.warnings if w.startswith("cannot read") or "is not a JSON object" in w]
    if unreadable:
        fix = f"repair that file (it must be a JSON object), then run {_install_command(ctx.env, target)}"
        return Check("wiring", "fail", unreadable[0], fix)
    wired = (
        ("Stop-hook drain", p.stop_hook),
        ("waiting Stop hook", p.waiter),
        ("compact hook", p.recall),
        ("MCP server", p.mcp_server),
    )
    gaps = [name for name, ok in wired if not ok]
    if p.missing:
        gaps.append("allow entries " + ", ".join(p.missing))
    if gaps:
        return Check("wiring", "fail", f"{p.target}: missing " + "; ".join(gaps), _install_command(ctx.env, target))
    guard = "guard wired" if p.guard else "guard not wired"
    return Check(
        "wiring",
        "ok",
        f"{p.target}: drain, waiter, compact hook, MCP server {p.mcp_command}, allow entries; {guard}; gate {p.gate}",
    )


def _host_checks(env: Mapping[str, str]) -> list[Check]:
    """One check per other client attend wired or found: a wired one that lacks a piece fails; one
    found but never wired warns (``attend install`` with no flag wires every client it finds)."""
    out = []
    for h in permissions.other_hosts(env, attend_command(env)):
        name = f"{h.host} wiring"
        bad = [c for c in h.checks if not c.ok]
        unreadable = next((c for c in bad if c.name == "config.toml"), None)
        if not bad:
            out.append(Check(name, "ok", f"{h.target}: " + "; ".join(c.detail for c in h.checks)))
        elif unreadable is not None:  # wired or not, install would refuse it too
            out.append(Check(name, "fail", unreadable.detail, unreadable.fix))
        elif not h.wired:
            out.append(Check(name, "warn", f"{h.target} found but not wired for attend", bad[0].fix))
        else:
            out.append(
                Check(name, "fail", f"{h.target}: " + "; ".join(f"{c.name}: {c.detail}" for c in bad), bad[0].fix)
            )
    return out


def _waiter_check(spool: Spool, sid: str, sensor: bool, env: Mapping[str, str]) -> Check:
    name = "waiter"
    if waiter.waiter_live(spool, sid):
        return Check(name, "ok", "attend wait --hook is waiting: an idle session is woken without Monitor")
    if waiter.wake_mode(env) == "off":
        return Check(name, "skip", "conduits.wake is off in the config", "attend config show (conduits.wake)")
    if sensor:
        return Check(name, "ok", "not waiting: the sensor loop is live and delivers")
    return Check(
        name,
        "warn",
        "no waiter for this session now (it starts at each turn end, where `attend install` wired it; "
        "doctor itself runs mid-turn, so this is expected inside a turn)",
        "see the wiring check",
    )


def _socket_check(spool: Spool, sid: str, sensor: bool, env: Mapping[str, str], cwd: str) -> Check:
    """Which conduit serves the session between turn ends, and whether the inbox socket is one of them."""
    serving = inbox_socket.serving(spool, sid, sensor, waiter.waiter_live(spool, sid), env, cwd)
    if inbox_socket.served_by(spool, sid) is not None:
        return Check("socket", "ok", serving)
    fix = "attend log shows why attend mcp stopped posting; restart the session to start it again"
    if inbox_socket.RESTING in (inbox_socket.declined_reason(spool, sid) or ""):
        fix = "nothing to do: it serves again once a turn has passed (attend log has each give-up)"
    return Check("socket", "skip" if sensor or not sessions.is_enrolled(spool, sid) else "warn", serving, fix)


def _config_check(env: Mapping[str, str], cwd: str | None) -> Check:
    """config.yaml and the project's overlay: a file that does not apply at all fails (its settings,
    a relay among them, are silently the defaults otherwise); a bad key warns (that key keeps its default)."""
    from attend.domain.settings import config

    cfg = config.load(env, config.project_of(cwd))
    unread = cfg.unread()
    if unread:
        return Check("config", "fail", str(unread[0]), "fix that line; attend config lint lists every problem")
    if cfg.problems:
        more = f" (and {len(cfg.problems) - 1} more)" if len(cfg.problems) > 1 else ""
        return Check("config", "warn", f"{cfg.problems[0]}{more}", "attend config lint lists them, with the fix")
    if not cfg.files:
        return Check("config", "ok", "no config file: the defaults")
    return Check("config", "ok", ", ".join(cfg.files))


def _relay_check(spool: Spool, env: Mapping[str, str]) -> Check:
    """The relay to other hosts: configured, running, under the spool's host name, and how much waits in
    its outbox or was set aside."""
    from attend import layout
    from attend.domain.messages import remote
    from attend.relay import settings

    given = layout.host()  # what this process's environment names the host
    owned = remote.spool_host(spool)
    remote.adopt(spool)
    s = settings.load(env)
    enabled = spool.exists(RELAY, RELAY_ON)
    queued = len(spool.names(RELAY, OUTBOX, "new"))
    aside, newest = remote.aside_summary(spool)
    if s is None and not enabled:
        return Check("relay", "skip", "no relay configured: this machine's sessions only")
    if s is None:
        return Check(
            "relay",
            "warn",
            f"sends are still queued for other hosts ({queued} waiting), but no relay is configured",
            "attend relay --off",
        )
    if s.problems:
        return Check("relay", "fail", s.problems[0], "fix config.yaml, then attend relay --check")
    if not spool.is_held(RELAY, RELAY_LOCK):
        return Check(
            "relay",
            "warn",
            f"configured for host {s.host} but not running: {queued} waiting in the outbox, other hosts unheard",
            "start it: attend relay (under a supervisor; docs/architecture/relay.md has a systemd unit)",
        )
    try:
        state = safejson.loads(spool.read(RELAY, RELAY_STATE, limit=4096))
    except (OSError, ValueError):
        state = {}
    state = state if isinstance(state, dict) else {}
    runs_as = state.get("host") if isinstance(state.get("host"), str) else ""
    said = str(state.get("state", ""))[:120]
    if owned and runs_as and runs_as != owned:
        return Check(
            "relay",
            "fail",
            f"the relay runs as host {runs_as[:63]}, but this spool's host is {owned}: records named for {owned} "
            "are not its to publish",
            f"restart the relay with ATTEND_HOST={owned}, or attend relay --off and start it again to rename the host",
        )
    if aside:
        return Check(
            "relay",
            "warn",
            f"running for host {runs_as or s.host}; {aside} record(s) set aside, never published (newest: {newest})",
            "the records are in relay/outbox/aside/ under the spool; send them again if they still matter",
        )
    also = f"; this environment names the host {given}, and attend uses the spool's" if owned and given != owned else ""
    return Check("relay", "ok", f"running for host {runs_as or s.host} ({queued} waiting in the outbox; {said}){also}")


def run(ctx: Context, req: DoctorRequest) -> Doctor:
    """Works without a spool: a context from ``Context.for_env`` opens it here, and a refusal is a check."""
    env, pid = ctx.env, ctx.pid
    checks = [_path_check(env), _wiring(ctx, req.target), _hook_check(env, req.target), *_host_checks(env)]
    checks.append(_config_check(env, ctx.cwd))
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
        why = "not inside an agent session" if who is not None else "identity unresolved"
        for name in ("MCP marker", "waiter", "socket", "sensor loop", "enrollment", "repair"):
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
                f"run {_install_command(env, req.target)}, then restart the session so the client starts the server",
            )
        )
        sensor = sessions.run_is_live(spool, sid)
        checks.append(_waiter_check(spool, sid, sensor, env))
        checks.append(_socket_check(spool, sid, sensor, env, who.origin))
        checks.append(
            Check("sensor loop", "ok", "attend run is live")
            if sensor
            else Check(
                "sensor loop",
                "warn",
                "no `attend run`: an idle session is woken by the waiter only, where it is wired "
                "(the Stop-hook drain still delivers at turn end)",
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
    if spool is not None:
        checks.append(_relay_check(spool, env))
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
