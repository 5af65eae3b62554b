"""config: show the effective settings and where each came from, print the files' paths, or lint them
(the relay section too)."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.sessions.context import Context
from attend.domain.settings import config
from attend.errors import AttendError, UsageError

DESCRIPTION = (
    "Show the effective settings (user config.yaml overlaid by the project's .claude/attend.yaml), "
    "print their paths, lint them (file:line: key: problem, exit 3 on errors), or init: write the default "
    "user config.yaml, every key commented, never over an existing file."
)
PARAMS = {"action": "show (default), path, lint or init."}
EXAMPLES = (  # the end of `attend config --help` (CLI only)
    ("attend config", "every setting, its value and where it is set"),
    ("attend config path", "the two config files"),
    ("attend config lint", "check them (exit 3 on problems)"),
)
ACTIONS = ("show", "path", "lint", "init")


@dataclass(frozen=True)
class ConfigRequest:
    action: str = "show"


@dataclass
class Setting:
    key: str
    value: float | int | str
    default: float | int | str
    source: str  # "default" or the file that set it
    help: str


@dataclass
class ConfigResult:
    action: str
    user_path: str
    project_path: str
    files: list[str]  # the files that exist
    settings: list[Setting]
    problems: list[str]  # file:line: key: problem
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: ConfigRequest) -> ConfigResult:
    if req.action not in ACTIONS:
        raise UsageError(f"unknown action {req.action!r}; use one of: {', '.join(ACTIONS)}")
    project = config.project_of(ctx.cwd)
    if req.action == "init":
        _init(ctx)
    cfg = config.load(ctx.env, project, announce=req.action != "lint")  # lint says them on stdout
    settings = [Setting(k, cfg.values[k], spec.default, cfg.sources[k], spec.help) for k, spec in config.KEYS.items()]
    problems = cfg.warnings()
    if req.action == "lint" and cfg.relay is not None:
        problems += _relay_problems(cfg.relay)
    return ConfigResult(
        req.action,
        config.user_file(ctx.env),  # as cfg.files names it
        config.project_file(project),
        cfg.files,
        settings,
        problems,
        # lint reports problems on stdout; the other actions say them once on stderr
        warnings=[] if req.action == "lint" else problems,
    )


def _init(ctx: Context) -> None:
    path = config.user_path(ctx.env)
    try:
        config.write_atomically(path, config.default_text(), overwrite=False)
    except FileExistsError:
        raise AttendError(f"{path} already exists; config init never overwrites it (attend config shows it)") from None


def _relay_problems(section: tuple[object, str, int]) -> list[str]:
    """The ``relay:`` section's problems as ``attend relay`` reads it: domain config leaves that section's
    keys to the relay's own settings module, which imports nothing of nats."""
    from attend.relay import settings

    data, where, line = section
    return settings.parse(data, f"{where}:{line}").problems
