"""sensors: what the sensor loop senses besides messages (built-in and script sensors), each with its
lane, state and interval; ``trust`` approves the project's config file so its script sensors may run.
Read-only, but for ``trust``, which writes only the user's approvals (beside config.yaml)."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.conduits.sensors import host, registry
from attend.domain.sessions.context import Context
from attend.domain.settings import config, trust
from attend.errors import AttendError, NotFoundError, UsageError

DESCRIPTION = (
    "List the sensor loop's senses (built-in and script sensors): kind, lane, state (on, off, failing, "
    "missing script, untrusted), interval, where each is defined and a script's exact command. trust "
    "approves the project's .claude/attend.yaml as it is now, each script's command and the project files "
    "it names, so its script sensors may run (a change to any of them needs it again); "
    "only a human may, typing y at a terminal outside any agent session."
)
PARAMS = {"action": "list (default) or trust."}
EXAMPLES = (  # the end of `attend sensors --help` (CLI only)
    ("attend sensors", "every sensor, its lane, state and interval"),
    ("attend sensors trust", "let this project's script sensors run"),
    ("attend sensors --json", "the same, for a script"),
)
ACTIONS = ("list", "trust")


@dataclass(frozen=True)
class SensorsRequest:
    action: str = "list"


@dataclass
class SensorRow:
    name: str
    kind: str  # built-in | script
    lane: str  # message | event
    state: str  # on | off | failing | missing script | untrusted
    why: str  # for failing, missing and untrusted: the cause, or the command that approves it
    interval: float
    min_interval: float
    description: str
    source: str  # built-in, or the config file that defines (or turns off) it
    command: list[str] | None = None  # a script sensor's argv


@dataclass
class Approved:
    name: str
    command: list[str]  # the exact argv approved
    files: dict[str, str]  # each project file it names (relative to the project) -> sha256


@dataclass
class SensorsResult:
    action: str
    sensors: list[SensorRow]
    trusted: str | None = None  # trust: the file approved
    warnings: list[str] = field(default_factory=list)
    approved: list[Approved] = field(default_factory=list)  # trust: what each script sensor may run


def run(ctx: Context, req: SensorsRequest) -> SensorsResult:
    if req.action not in ACTIONS:
        raise UsageError(f"unknown action {req.action!r}; use one of: {', '.join(ACTIONS)}")
    project = config.project_of(ctx.cwd)
    cfg = config.load(ctx.env, project, announce=True)
    trusted = None
    approved: list[Approved] = []
    if req.action == "trust":
        trusted, approved = _trust(ctx, cfg, project)
        cfg = config.load(ctx.env, project)
    failing = _failing(ctx)
    rows = []
    for s in registry.build(cfg, ctx.env):
        state, why = s.state()
        if state == "on" and failing.get(s.name):
            state, why = "failing", failing[s.name]
        command = list(getattr(s, "argv", ())) or None
        rows.append(
            SensorRow(s.name, s.kind, s.lane, state, why, s.interval, s.min_interval, s.description, s.source, command)
        )
    return SensorsResult(req.action, rows, trusted, cfg.warnings(), approved)


TRUST_ACTION = "approving project code to run (attend sensors trust)"


def _trust(ctx: Context, cfg: config.Config, project: str) -> tuple[str, list[Approved]]:
    path = config.project_file(project)  # as cfg.files and cfg.digests name it
    if path not in cfg.files:
        raise NotFoundError(f"no project config at {path}; nothing to trust")
    # An agent never approves what then runs outside its client's prompts: a human at a terminal
    # confirms it there (docs/architecture/sessions.md, "Who may do what").
    scripts = sorted(s.name for s in cfg.sensors.values() if s.script is not None and s.source == path)
    ctx.human(TRUST_ACTION, f"Approve {path} and the scripts its sensors run ({', '.join(scripts) or 'none'})?")
    pins = trust.approve(ctx.env, path, cfg.digests[path], list(cfg.sensors.values()))
    return path, [Approved(name, list(p.argv), dict(sorted(p.files.items()))) for name, p in sorted(pins.items())]


def _failing(ctx: Context) -> dict[str, str]:
    """What the caller's own loop last found failing (its sensors.json); nothing for a human."""
    try:
        who = ctx.who()
        if not who.is_agent:
            return {}
        states = host.read_states(ctx.spool, who.id)
    except AttendError:
        return {}
    return {name: str(s["failing"]) for name, s in states.items() if s.get("failing")}
