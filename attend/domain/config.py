"""Settings: ``$XDG_CONFIG_HOME/attend/config.yaml`` (default ~/.config), overlaid by the project's
``<project>/.claude/attend.yaml`` for the keys a project may set. Every key is documented in
docs/architecture/config.md and declared once in KEYS below.

A bad value or unknown key is a Problem (file, line, key, what is wrong): the rest still loads and
the key keeps its default, so one typo never stops a consumer. yaml is imported only when a file
exists, never on a hot path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attend import layout


@dataclass(frozen=True)
class Key:
    default: float | int
    kind: type  # int or float
    minimum: float
    help: str
    project: bool = False  # a project overlay may set it


KEYS: dict[str, Key] = {
    "retention.max_age_days": Key(14, float, 0.01, "room records and seen deliveries older than this are removed"),
    "retention.max_per_room": Key(10000, int, 1, "each room keeps at most this many newest records"),
    "retention.max_seen_per_session": Key(10000, int, 1, "each session's cur/ keeps at most this many seen entries"),
    "retention.session_grace_hours": Key(
        24, float, 0, "the spool of a session that is no longer live is removed this long after its last activity"
    ),
    "sensor.cleanup_interval": Key(
        600, float, 0, "seconds between the sensor loop's bounded cleanup sweeps; 0 turns them off", project=True
    ),
    "sensor.cleanup_budget": Key(5000, int, 100, "spool entries one in-loop sweep may examine", project=True),
    "governor.burst": Key(
        5, int, 1, "lines a minute per sender that a conduit shows as they come; after that, the cooldown"
    ),
    "governor.cooldown": Key(3.0, float, 0, "seconds between a fast sender's lines; what it sends between folds"),
    "governor.max_per_minute": Key(30, int, 1, "lines a minute per sender that a conduit shows, at most"),
}


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.key}: {self.message}"


@dataclass
class Config:
    values: dict[str, float | int]
    sources: dict[str, str]  # key -> "default" or the file it came from
    problems: list[Problem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # the files that exist and were read

    def get(self, key: str) -> float | int:
        return self.values[key]

    def warnings(self) -> list[str]:
        return [str(p) for p in self.problems]


def user_path(env: Mapping[str, str] | None = None) -> Path:
    return Path(layout.config_root(env)) / "config.yaml"


def project_path(project: str) -> Path:
    return Path(project) / ".claude" / "attend.yaml"


def defaults() -> Config:
    return Config({k: v.default for k, v in KEYS.items()}, dict.fromkeys(KEYS, "default"))


def load(env: Mapping[str, str] | None = None, project: str | None = None) -> Config:
    cfg = defaults()
    layers = [(user_path(env), False)]
    if project:
        layers.append((project_path(project), True))
    for file, is_project in layers:
        try:
            text = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as e:
            cfg.problems.append(Problem(str(file), 1, "-", f"cannot read: {e}"))
            continue
        cfg.files.append(str(file))
        _apply(cfg, text, str(file), is_project)
    return cfg


def _apply(cfg: Config, text: str, where: str, is_project: bool) -> None:
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        cfg.problems.append(Problem(where, line, "-", f"not valid YAML: {getattr(e, 'problem', None) or e}"))
        return
    if root is None:
        return
    for key, node, line in _leaves(root, "", cfg, where):
        spec = KEYS.get(key)
        if spec is None:
            near = [k for k in KEYS if k.split(".")[-1] == key.split(".")[-1] or k.startswith(key + ".")]
            hint = f"; did you mean {near[0]}?" if near else f"; known keys: {', '.join(KEYS)}"
            cfg.problems.append(Problem(where, line, key, f"unknown key{hint}"))
            continue
        if is_project and not spec.project:
            cfg.problems.append(
                Problem(where, line, key, "applies to the whole machine; set it in the user config, not a project's")
            )
            continue
        value = _value(node, spec)
        if isinstance(value, str):
            cfg.problems.append(Problem(where, line, key, value))
            continue
        cfg.values[key] = value
        cfg.sources[key] = where


def _leaves(node: Any, prefix: str, cfg: Config, where: str) -> list[tuple[str, Any, int]]:
    import yaml

    line = node.start_mark.line + 1
    if not isinstance(node, yaml.MappingNode):
        if not prefix:
            cfg.problems.append(Problem(where, line, "-", "the file must be a mapping, e.g. `retention: {...}`"))
            return []
        return [(prefix, node, line)]
    out: list[tuple[str, Any, int]] = []
    for key_node, value_node in node.value:
        key = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
        if isinstance(value_node, yaml.MappingNode) and key not in KEYS:
            out.extend(_leaves(value_node, key, cfg, where))
        else:
            out.append((key, value_node, key_node.start_mark.line + 1))
    return out


def _value(node: Any, spec: Key) -> float | int | str:
    """The parsed value, or a string saying what is wrong with it."""
    import yaml

    want = "a whole number" if spec.kind is int else "a number"
    if not isinstance(node, yaml.ScalarNode):
        return f"must be {want}, not a list or mapping"
    if node.style in ("'", '"'):
        return f"must be {want}, not the string {node.value!r}"
    raw = str(node.value).replace("_", "")
    try:
        value: float | int = int(raw) if spec.kind is int else float(raw)
    except ValueError:
        return f"must be {want}, not {node.value!r}"
    if value < spec.minimum:
        return f"must be at least {spec.minimum:g}, not {node.value}"
    return value


def project_of(cwd: str | None) -> str:
    from attend import identity

    return identity.normalise_origin(cwd or os.getcwd())
