"""Settings: ``$XDG_CONFIG_HOME/attend/config.yaml`` (default ~/.config), overlaid by the project's
``<project>/.claude/attend.yaml`` for the keys a project may set. Every key is documented in
docs/architecture/config.md and declared once in KEYS below.

A bad value or unknown key is a Problem (file, line, key, what is wrong): the rest still loads and
the key keeps its default, so one typo never stops a consumer. yaml is imported only when a file
exists, never on a hot path.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from attend import layout

# typing for mypy alone, and pathlib only for the callers that want a Path: every sensor loop loads
# config, and reads its files by str (~0.6 MB each, in a hundred idle loops).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


GRID = 30.0  # seconds: the sensor loop's timer grid (attend.conduits.loop.TICK); a timer under it wakes off it


@dataclass(frozen=True)
class Key:
    default: float | int | str
    kind: type  # int, float, or str (one of ``choices``)
    minimum: float
    help: str
    project: bool = False  # a project overlay may set it
    choices: tuple[str, ...] = ()
    maximum: float = float("inf")
    off: bool = False  # 0 is allowed below ``minimum``: it turns the thing off
    # What a project overlay may set, when narrower: a project's file needs no approval, so it may not
    # make every loop of the project spend more than the defaults do.
    project_min: float | None = None
    project_max: float | None = None


KEYS: dict[str, Key] = {
    "retention.max_age_days": Key(14, float, 0.01, "room records and seen deliveries older than this are removed"),
    "retention.max_per_room": Key(10000, int, 1, "each room keeps at most this many newest records"),
    "retention.max_seen_per_session": Key(10000, int, 1, "each session's cur/ keeps at most this many seen entries"),
    "retention.session_grace_hours": Key(
        24, float, 0, "the spool of a session that is no longer live is removed this long after its last activity"
    ),
    "sensor.cleanup_interval": Key(
        600,
        float,
        GRID,
        "seconds between the sensor loop's bounded cleanup sweeps; 0 turns them off",
        project=True,
        off=True,
        project_min=600,
    ),
    "sensor.cleanup_budget": Key(
        5000, int, 100, "spool entries one in-loop sweep may examine", project=True, maximum=1_000_000, project_max=5000
    ),
    # The two lanes' governors (docs/architecture/sensors.md): messages pass freely, events are held.
    "governor.message.cooldown": Key(3, float, 0, "seconds between two message-lane lines (peers, keepwarm)"),
    "governor.message.max_per_window": Key(30, int, 1, "message-lane lines at most per governor.message.window"),
    "governor.message.window": Key(60, float, 1, "seconds over which governor.message.max_per_window counts"),
    "governor.event.cooldown": Key(15, float, 0, "seconds between two event-lane lines (context, script sensors)"),
    "governor.event.max_per_window": Key(3, int, 1, "event-lane lines at most per governor.event.window"),
    "governor.event.window": Key(120, float, 1, "seconds over which governor.event.max_per_window counts"),
    "peers.activity_window": Key(30, float, 1, "seconds: a peer whose transcript was written this recently is working"),
    "context.threshold": Key(
        80, float, 1, "percent of the model's window at which the context sensor speaks", project=True
    ),
    "disclosure.stretch": Key(
        7200, float, 60, "seconds of messaging after which the disclosure sensor says the reheat again"
    ),
    "keepwarm.idle_seconds": Key(3000, float, 1, "idle seconds after which an armed keepwarm prints its line"),
    "keepwarm.cache_ttl": Key(3600, float, 1, "seconds of idleness after which the prompt cache has lapsed"),
    "keepwarm.min_tokens": Key(50000, int, 0, "a context smaller than this is not worth keeping warm"),
    # USD per million tokens, for the keepwarm card; edit them when the price list changes.
    "prices.opus.cache_write": Key(6.25, float, 0, "USD per million tokens written to the cache, Opus models"),
    "prices.opus.cache_read": Key(0.5, float, 0, "USD per million tokens read from the cache, Opus models"),
    "prices.sonnet.cache_write": Key(3.75, float, 0, "USD per million tokens written to the cache, Sonnet models"),
    "prices.sonnet.cache_read": Key(0.3, float, 0, "USD per million tokens read from the cache, Sonnet models"),
    "prices.haiku.cache_write": Key(1.25, float, 0, "USD per million tokens written to the cache, Haiku models"),
    "prices.haiku.cache_read": Key(0.1, float, 0, "USD per million tokens read from the cache, Haiku models"),
    "conduits.wake": Key(
        "joined",
        str,
        0,
        "which sessions the waiting conduit wakes when idle: joined (every session enrolled by run or join) or off",
        choices=("joined", "off"),
    ),
    "conduits.socket": Key(
        "on",
        str,
        0,
        "whether attend mcp posts a session's mail to the client's inbox socket (mid-turn, or waking it): on or off",
        choices=("on", "off"),
    ),
    "conduits.headless_wait": Key(
        0,
        int,
        0,
        "seconds a headless session (claude -p, the Agent SDK) waits for a message after each turn before "
        "it may end; 0: attend never holds it open",
    ),
    "governor.sender.burst": Key(
        5, int, 1, "lines a minute per sender that a conduit shows as they come; after that, the cooldown"
    ),
    "governor.sender.cooldown": Key(
        3.0, float, 0, "seconds between a fast sender's lines; what it sends between folds"
    ),
    "governor.sender.max_per_minute": Key(30, int, 1, "lines a minute per sender that a conduit shows, at most"),
    "leases.enforce": Key(
        "warn",
        str,
        0,
        "an edit (or a commit) of a file under another live session's lease: warn (it goes through, and the "
        "model is told who holds it) or refuse",
        project=True,
        choices=("warn", "refuse"),
    ),
    # The inbound rule's default per sender class (docs/architecture/outcomes.md); a session's own rule wins.
    "inbound.local": Key(
        "accept",
        str,
        0,
        "what a session does with messages from this host's sessions: accept, hold or refuse",
        project=True,
        choices=("accept", "hold", "refuse"),
    ),
    "inbound.humans": Key(
        "accept",
        str,
        0,
        "what a session does with messages from this host's humans: accept, hold or refuse",
        project=True,
        choices=("accept", "hold", "refuse"),
    ),
    "inbound.hosts": Key(
        "accept",
        str,
        0,
        "what a session does with messages relayed from other hosts: accept, hold or refuse",
        project=True,
        choices=("accept", "hold", "refuse"),
    ),
}
SENSORS = "sensors"  # the one section that is not a key: sensors: {+name: {script: …}, -name:, name: {…}}
RELAY = "relay"  # relay: {servers: [...], …}: read and checked by attend.relay (docs/architecture/relay.md)


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    key: str
    message: str

    def __str__(self) -> str:
        # A problem of the whole file (unreadable, not YAML) names no key.
        return f"{self.file}:{self.line}: " + (f"{self.key}: " if self.key else "") + self.message


SECTIONS = frozenset(k.rsplit(".", i)[0] for k in KEYS for i in range(1, k.count(".") + 1))  # governor.message, …


def _closest(key: str) -> str:
    """The known key or section an unknown one most likely meant (a typo, or the right name under
    another section), or where the known keys are listed: never all of them in one line."""
    import difflib

    known = [*KEYS, *SECTIONS, SENSORS, RELAY]
    near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if not near:  # the right leaf under the wrong section (`sensor.cooldown`), or a section alone
        leaf = key.split(".")[-1]
        near = [k for k in KEYS if k.split(".")[-1] == leaf or k.startswith(key + ".")][:1]
    return f"; did you mean {near[0]}?" if near else "; attend config lists the known keys"


def _guess(word: str, known: tuple[str, ...], listed: bool = True) -> str:
    """The closest of a short list of names, else (when ``listed``) the list itself."""
    import difflib

    near = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    return f"; did you mean {near[0]}?" if near else f"; known: {', '.join(known)}" if listed else ""


def _example(section: str) -> str:
    return next(k for k in KEYS if k.startswith(section + "."))


BUILT_IN_SENSORS = ("peers", "context", "keepwarm", "disclosure")  # the names a `name:` entry (no sign) may configure
# seconds: the least interval config may set. Under GRID only in the user's own file, which no session
# can write (a project's may go no lower than GRID; docs/architecture/config.md, "Timers and the grid").
MIN_INTERVAL = {"peers": 5.0, "context": 20.0, "keepwarm": 1.0, "disclosure": 1.0}
SENSOR_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
SCRIPT_KEYS = ("script", "interval", "timeout", "description")
BUILT_IN_KEYS = ("enabled", "interval")
SCRIPT_INTERVAL = 30.0  # seconds, when a script sensor names none
SCRIPT_TIMEOUT = 10.0
MIN_SCRIPT_INTERVAL = 5.0  # a script is a process: no faster than this
MIN_BUILT_IN_INTERVAL = 1.0
MAX_SCRIPT_TIMEOUT = 600.0  # seconds: a timeout is there to end a hung script


@dataclass(frozen=True)
class SensorSetting:
    """One entry of the ``sensors:`` section, as one file states it."""

    name: str
    source: str  # the file
    line: int
    project: bool  # stated by a project overlay: a script runs only once that file is trusted
    enabled: bool = True
    script: tuple[str, ...] | None = None  # a script sensor's argv (never a shell line)
    interval: float | None = None
    timeout: float = SCRIPT_TIMEOUT
    description: str = ""
    base: str = ""  # the folder a relative script path is found from (the project, or the config folder)


@dataclass
class Config:
    values: dict[str, float | int | str]
    sources: dict[str, str]  # key -> "default" or the file it came from
    problems: list[Problem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # the files that exist and were read
    sensors: dict[str, SensorSetting] = field(default_factory=dict)  # the last file's word on each name
    digests: dict[str, str] = field(default_factory=dict)  # file -> sha256 of the text read (trust)
    relay: tuple[object, str, int] | None = None  # the user file's ``relay:`` section as data, its file, line
    # The user file could not be read whole (not YAML, say) and has a top-level ``relay:`` line: its file
    # and line, so the relay says it is not read rather than "no relay configured".
    relay_unread: tuple[str, int] | None = None

    def get(self, key: str) -> float | int | str:
        return self.values[key]

    def warnings(self) -> list[str]:
        return [str(p) for p in self.problems]

    def unread(self) -> list[Problem]:
        """The problems that kept a whole file from applying (not YAML, unreadable, not a mapping)."""
        return [p for p in self.problems if not p.key and p.message.endswith((IGNORED, PROJECT_IGNORED))]


# What a problem of a whole file adds: none of its settings applies.
IGNORED = "the defaults are in force until it is fixed"
PROJECT_IGNORED = "none of this project's settings applies until it is fixed"
RELAY_LINE = re.compile(r"^relay\s*:", re.M)


def user_file(env: Mapping[str, str] | None = None) -> str:
    """The user's config file, as ``load`` names it in ``files``, ``sources`` and ``digests``."""
    return os.path.join(layout.config_root(env), "config.yaml")


def project_file(project: str) -> str:
    """A project's overlay, as ``load`` names it (the key its trust is recorded under)."""
    return os.path.join(project, ".claude", "attend.yaml")


def user_path(env: Mapping[str, str] | None = None) -> Path:
    from pathlib import Path

    return Path(user_file(env))


def project_path(project: str) -> Path:
    from pathlib import Path

    return Path(project_file(project))


def defaults() -> Config:
    return Config({k: v.default for k, v in KEYS.items()}, dict.fromkeys(KEYS, "default"))


def load(env: Mapping[str, str] | None = None, project: str | None = None, announce: bool = False) -> Config:
    """``announce``: a file that does not apply at all (not YAML, unreadable) is said on stderr, once a
    process, naming its file and line (a command a person runs; a hook or the MCP server stays quiet)."""
    cfg = defaults()
    layers = [(user_file(env), False)]
    if project:
        layers.append((project_file(project), True))
    for file, is_project in layers:
        before = len(cfg.problems)
        try:
            text = _read(file)
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as e:
            cfg.problems.append(Problem(file, 1, "", f"cannot read: {e}"))
            text = ""
        else:
            cfg.files.append(file)
            cfg.digests[file] = digest(text)
            _apply(cfg, text, file, is_project)
        for i in range(before, len(cfg.problems)):
            p = cfg.problems[i]
            if not p.key and p.line and p.message.startswith(WHOLE_FILE):
                note = PROJECT_IGNORED if is_project else IGNORED
                cfg.problems[i] = Problem(p.file, p.line, p.key, f"{p.message}; {note}")
                found = RELAY_LINE.search(text)
                if found and not is_project and cfg.relay is None:
                    cfg.relay_unread = (file, text.count("\n", 0, found.start()) + 1)
    if announce:
        say_unread(cfg)
    return cfg


WHOLE_FILE = ("cannot read", "not valid YAML", "nested too deep", "the file must be a mapping")


def say_unread(cfg: Config) -> None:
    """Each file that does not apply, one line on stderr, once a process (the CLI's warnings skip it)."""
    import sys

    from attend.domain.sessions.context import REPORTED

    for p in cfg.unread():
        if str(p) not in REPORTED:
            REPORTED.add(str(p))
            sys.stderr.write(f"attend: warning: {p}\n")


def _read(file: str) -> str:
    with open(file, encoding="utf-8") as f:
        return f.read()


def _apply(cfg: Config, text: str, where: str, is_project: bool) -> None:
    try:
        _apply_yaml(cfg, text, where, is_project)
    except RecursionError:  # PyYAML composes recursively: a file nested a thousand deep is 2 KB
        cfg.problems.append(Problem(where, 1, "", "nested too deep to read"))


def _apply_yaml(cfg: Config, text: str, where: str, is_project: bool) -> None:
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        cfg.problems.append(Problem(where, line, "", f"not valid YAML: {getattr(e, 'problem', None) or e}"))
        return
    if root is None:
        return
    if isinstance(root, yaml.MappingNode):
        kept = []
        for key_node, value_node in root.value:
            if key_node.value == SENSORS:
                _sensors(cfg, value_node, where, is_project)
            elif key_node.value == RELAY and not is_project:
                # attend.relay checks it (a relay that is not configured never imports it).
                cfg.relay = (yaml.safe_load(yaml.serialize(value_node)), where, key_node.start_mark.line + 1)
            else:
                kept.append((key_node, value_node))
        root.value = kept
    for key, node, line in _leaves(root, "", cfg, where):
        spec = KEYS.get(key)
        if spec is None and key in SECTIONS:  # `governor: 5`: a value where its keys belong
            if not (isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")):  # `retention:` alone is empty
                cfg.problems.append(Problem(where, line, key, f"is a section: set its keys, e.g. {_example(key)}"))
            continue
        if spec is None:
            hint = _closest(key)
            cfg.problems.append(Problem(where, line, key, f"unknown key{hint}"))
            continue
        if is_project and not spec.project:
            cfg.problems.append(
                Problem(where, line, key, "applies to the whole machine; set it in the user config, not a project's")
            )
            continue
        value = _value(node, spec, is_project)
        if isinstance(value, Bad):
            cfg.problems.append(Problem(where, line, key, value))
            continue
        cfg.values[key] = value
        cfg.sources[key] = where


def _leaves(node: Any, prefix: str, cfg: Config, where: str) -> list[tuple[str, Any, int]]:
    import yaml

    line = node.start_mark.line + 1
    if not isinstance(node, yaml.MappingNode):
        if not prefix:
            cfg.problems.append(Problem(where, line, "", "the file must be a mapping, e.g. `retention: {...}`"))
            return []
        return [(prefix, node, line)]
    out: list[tuple[str, Any, int]] = []
    for key_node, value_node in node.value:
        key = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
        if isinstance(value_node, yaml.MappingNode) and key not in KEYS:
            if not value_node.value and key not in SECTIONS:  # `governor: {mesage: {}}`: a misspelt section
                out.append((key, value_node, key_node.start_mark.line + 1))
            out.extend(_leaves(value_node, key, cfg, where))
        else:
            out.append((key, value_node, key_node.start_mark.line + 1))
    return out


def _value(node: Any, spec: Key, is_project: bool = False) -> float | int | str | Bad:
    """The parsed value, or what is wrong with it (a project overlay within its narrower bounds)."""
    import math

    import yaml

    if spec.choices:
        if isinstance(node, yaml.ScalarNode) and str(node.value) in spec.choices:
            return str(node.value)
        return Bad(f"must be one of {', '.join(spec.choices)}, not {getattr(node, 'value', node)!r}")
    want = "a whole number" if spec.kind is int else "a number"
    if not isinstance(node, yaml.ScalarNode):
        return Bad(f"must be {want}, not a list or mapping")
    if node.style in ("'", '"'):
        return Bad(f"must be {want}, not the string {node.value!r}")
    raw = str(node.value).replace("_", "")
    try:
        value: float | int = int(raw) if spec.kind is int else float(raw)
    except ValueError:
        return Bad(f"must be {want}, not {node.value!r}")
    if not math.isfinite(value):
        return Bad(f"must be a finite number, not {node.value}")
    if spec.off and value == 0:
        return value
    low = max(spec.minimum, spec.project_min) if is_project and spec.project_min is not None else spec.minimum
    high = min(spec.maximum, spec.project_max) if is_project and spec.project_max is not None else spec.maximum
    where = " in a project's file" if is_project and (low, high) != (spec.minimum, spec.maximum) else ""
    also = " (or 0, off)" if spec.off else ""
    if value < low:
        return Bad(f"must be at least {low:g}{also}{where}, not {node.value}")
    if value > high:
        return Bad(f"must be at most {high:g}{where}, not {node.value}")
    return value


def digest(text: str) -> str:
    # CPython's own SHA-256, as rooms.project_key takes its SHA-1: hashlib would load OpenSSL (~4 MB
    # in every sensor loop, which digests its config files at start).
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]  # CPython 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found]  # CPython 3.12 on
        except ImportError:
            from hashlib import sha256
    hexdigest: str = sha256(text.encode("utf-8")).hexdigest()
    return hexdigest


def _sensors(cfg: Config, node: Any, where: str, is_project: bool) -> None:
    """``sensors:``: ``+name: {script: …}`` adds a script sensor, ``-name:`` turns a sensor off, and
    ``name: {enabled:, interval:}`` configures a built-in one."""
    import yaml

    line = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
        return
    if not isinstance(node, yaml.MappingNode):
        cfg.problems.append(Problem(where, line, SENSORS, "must be a mapping, e.g. `sensors: {+ci: {script: …}}`"))
        return
    base = os.path.dirname(os.path.dirname(where)) if is_project else os.path.dirname(where)
    for key_node, value_node in node.value:
        raw = str(key_node.value)
        at = key_node.start_mark.line + 1
        sign, name = (raw[0], raw[1:]) if raw[:1] in "+-" else ("", raw)
        key = f"{SENSORS}.{raw}"
        if not SENSOR_NAME.fullmatch(name):
            cfg.problems.append(Problem(where, at, key, "a sensor name is lower-case letters, digits, - and _"))
            continue
        known = name in BUILT_IN_SENSORS or name in cfg.sensors
        if name == "peers" and sign != "+":
            cfg.problems.append(
                Problem(where, at, key, "peers is how messages arrive and takes no settings; leave channels instead")
            )
            continue
        if sign == "-":
            if not known:
                cfg.problems.append(Problem(where, at, key, f"no sensor {name!r} to turn off; {_names(cfg)}"))
                continue
            prev = cfg.sensors.get(name)
            off = SensorSetting(name, where, at, is_project, enabled=False)
            cfg.sensors[name] = _replace(prev, enabled=False, source=where, line=at) if prev else off
            continue
        if sign == "" and name not in BUILT_IN_SENSORS:
            near = _guess(name, BUILT_IN_SENSORS, listed=False)
            hint = near or (f"; a script sensor is `+{name}:`" if name not in cfg.sensors else "")
            cfg.problems.append(Problem(where, at, key, f"not a built-in sensor ({', '.join(BUILT_IN_SENSORS)}){hint}"))
            continue
        if sign == "+" and name in BUILT_IN_SENSORS:
            cfg.problems.append(Problem(where, at, key, f"{name!r} is a built-in sensor; configure it as `{name}:`"))
            continue
        entry = _sensor_entry(value_node, name, where, at, is_project, sign == "+", base)
        if isinstance(entry, Problem):
            cfg.problems.append(entry)
        else:
            cfg.sensors[name] = entry


def _names(cfg: Config) -> str:
    return "known: " + ", ".join([*BUILT_IN_SENSORS, *(n for n in cfg.sensors if n not in BUILT_IN_SENSORS)])


def _sensor_entry(
    node: Any, name: str, where: str, at: int, is_project: bool, script: bool, base: str
) -> SensorSetting | Problem:
    import yaml

    allowed = SCRIPT_KEYS if script else BUILT_IN_KEYS
    key = f"{SENSORS}.{'+' if script else ''}{name}"
    if not isinstance(node, yaml.MappingNode):
        want = "{script: …, interval: 30}" if script else "{enabled: false}"
        return Problem(where, at, key, f"must be a mapping, e.g. {want}")
    fields: dict[str, Any] = {}
    for k, v in node.value:
        line = k.start_mark.line + 1
        if k.value not in allowed:
            return Problem(where, line, f"{key}.{k.value}", f"unknown key{_guess(str(k.value), allowed)}")
        fields[k.value] = (v, line)
    setting = SensorSetting(name, where, at, is_project, base=base)
    floor = MIN_SCRIPT_INTERVAL if script else MIN_INTERVAL.get(name, MIN_BUILT_IN_INTERVAL)
    # A project's built-in sensor polls in every loop of the project, unapproved: on the grid, no faster.
    limits = {
        "interval": Key(0, float, floor, "", project_min=None if script else GRID),
        "timeout": Key(0, float, 0.1, "", maximum=MAX_SCRIPT_TIMEOUT),
    }
    for k, (v, line) in fields.items():
        where_key = f"{key}.{k}"
        if k in ("interval", "timeout"):
            value = _value(v, limits[k], is_project)
            if isinstance(value, str):
                return Problem(where, line, where_key, value)
            setting = _replace(setting, **{k: float(value)})
        elif k == "enabled":
            if not (isinstance(v, yaml.ScalarNode) and v.tag.endswith(":bool")):
                return Problem(where, line, where_key, f"must be true or false, not {getattr(v, 'value', v)!r}")
            setting = _replace(setting, enabled=v.value.lower() in ("true", "yes", "on"))
        elif k == "description":
            if not isinstance(v, yaml.ScalarNode):
                return Problem(where, line, where_key, "must be one line of text")
            setting = _replace(setting, description=" ".join(str(v.value).split()))
        elif k == "script":
            argv = _argv(v)
            if isinstance(argv, str):
                return Problem(where, line, where_key, argv)
            setting = _replace(setting, script=argv)
    if script and setting.script is None:
        return Problem(where, at, key, "a script sensor needs `script:` (a command line or a list of words)")
    if script and setting.interval is None:
        setting = _replace(setting, interval=SCRIPT_INTERVAL)
    return setting


def _replace(setting: SensorSetting, **changes: Any) -> SensorSetting:
    import dataclasses

    return dataclasses.replace(setting, **changes)


def _argv(node: Any) -> tuple[str, ...] | str:
    """The command as an argv: a list of words, or one line split the way a shell splits words
    (shlex), but never given to a shell, so nothing in it is expanded or run but the command."""
    import shlex  # only a script sensor's line needs it

    import yaml

    if isinstance(node, yaml.SequenceNode):
        words = [w.value for w in node.value if isinstance(w, yaml.ScalarNode)]
        if len(words) != len(node.value) or not words:
            return "must be a command line or a non-empty list of words"
        argv = tuple(str(w) for w in words)
    elif isinstance(node, yaml.ScalarNode):
        try:
            argv = tuple(shlex.split(str(node.value)))
        except ValueError as e:
            return f"cannot split into words: {e}"
        if not argv:
            return "must name a command"
    else:
        return "must be a command line or a list of words"
    if any("\0" in w or "\n" in w for w in argv):
        return "a word holds a line break or NUL"
    return argv


def read_user_text(env: Mapping[str, str] | None) -> str | None:
    """The user file's text, None when there is none (an unreadable one raises OSError)."""
    try:
        return _read(user_file(env))
    except FileNotFoundError:
        return None


def parse(text: str, where: str) -> Config:
    """The defaults overlaid by ``text`` alone, as a user file: to check an edit reads back."""
    cfg = defaults()
    _apply(cfg, text, where, False)
    return cfg


class Bad(str):
    """What is wrong with a value (a plain str is a valid value of a choice key)."""


def project_of(cwd: str | None) -> str:
    from attend import identity

    return identity.normalise_origin(cwd or os.getcwd())


# ---------------------------------------------------------------------- writing, and trust

TRUST_FILE = "trusted.json"  # the user's approvals of project files, beside config.yaml (attend.domain.settings.trust)


def write_atomically(path: Path, text: str, overwrite: bool = True) -> None:
    """Replace ``path`` whole (a new inode, fsynced), under an exclusive lock on its folder, so two
    writers never interleave and a crash leaves the old file or the new one, and no temporary file.
    With ``overwrite`` false the file is published by link(), which fails on an existing name."""
    import fcntl

    layout.private_dirs(path.parent)
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)  # a lock on the folder itself: no lock file to leave behind
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            if overwrite:
                os.replace(tmp, path)
            else:
                os.link(tmp, path)  # FileExistsError: never overwrite (config init)
                os.unlink(tmp)
            os.fsync(folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    finally:
        os.close(folder)  # closing releases the lock


def trust_path(env: Mapping[str, str] | None = None) -> Path:
    from pathlib import Path

    return Path(layout.config_root(env), TRUST_FILE)


def default_text() -> str:
    """The default config file, every key at its default with its meaning beside it (``attend config
    init``); comments and order survive ``attend tune --apply``."""
    lines = [
        "# attend settings: every key at its default; docs/architecture/config.md describes them.",
        "# `attend config lint` checks this file; `attend tune --apply` edits the timing keys in place.",
    ]
    opened: list[str] = []
    for key, spec in KEYS.items():
        *parents, name = key.split(".")
        common = 0
        while common < min(len(opened), len(parents)) and opened[common] == parents[common]:
            common += 1
        if common == 0:
            lines.append("")
        for depth in range(common, len(parents)):
            lines.append(f"{'  ' * depth}{parents[depth]}:")
        opened = parents
        value = spec.default if isinstance(spec.default, str) else f"{spec.default:g}"
        lines.append(f"{'  ' * len(parents)}{name}: {value}  # {spec.help}")
    lines += [
        "",
        "# sensors:  (docs/architecture/sensors.md)",
        "#   +ci: {script: ./tools/ci-status, interval: 60}  # a script sensor: each stdout line is one observation",
        "#   -keepwarm:  # turn a sensor off",
        "",
    ]
    return "\n".join(lines)
