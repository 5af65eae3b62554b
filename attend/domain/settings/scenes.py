"""Scenes: named sets of channels in ``$XDG_CONFIG_HOME/attend/scenes.yaml`` (default ~/.config).

    review: {channels: [review, deploy]}
    quiet: [ops]
    solo: []

``private`` is built in: no channels, and the session opts out of the drain. The whole file is
checked before anything changes, so a malformed file changes no membership; every error names the
file and line. yaml is imported here only, never on a hot path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attend import layout
from attend.domain.core import rooms
from attend.errors import AttendError, UsageError

PRIVATE = "private"
SCENE_KEYS = ("channels", "description")


class SceneFileError(AttendError):
    """scenes.yaml is malformed or uses keys attend does not know."""


@dataclass(frozen=True)
class Scene:
    name: str
    channels: tuple[str, ...]
    description: str = ""
    builtin: bool = False


def path(env: Mapping[str, str] | None = None) -> Path:
    return Path(layout.config_root(env)) / "scenes.yaml"


def builtin() -> Scene:
    return Scene(PRIVATE, (), "no channels; opt out of the drain", True)


def load(env: Mapping[str, str] | None = None) -> list[Scene]:
    """Every scene, the built-in ``private`` first. Raises SceneFileError naming file and line."""
    file = path(env)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [builtin()]
    except (OSError, UnicodeDecodeError) as e:
        raise SceneFileError(f"{file}: cannot read: {e}") from e
    return [builtin(), *parse(text, str(file))]


def parse(text: str, where: str) -> list[Scene]:
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise SceneFileError(f"{where}{line}: not valid YAML: {problem}") from e
    except RecursionError:  # PyYAML composes recursively: a thousand `[` take 2 KB
        raise SceneFileError(f"{where}: nested too deep to read") from None
    if root is None:
        return []

    def fail(node: Any, message: str) -> SceneFileError:
        return SceneFileError(f"{where}:{node.start_mark.line + 1}: {message}")

    if not isinstance(root, yaml.MappingNode):
        raise fail(root, "the file must map scene names to channel lists, e.g. `review: [review, deploy]`")
    out: list[Scene] = []
    seen: set[str] = set()
    for key_node, value_node in root.value:
        name = str(key_node.value)
        if not isinstance(key_node, yaml.ScalarNode) or not rooms.is_channel_name(name):
            raise fail(key_node, f"scene name {name!r} must be letters, digits, '_', '.' or '-'")
        if name == PRIVATE:
            raise fail(key_node, "`private` is built in (no channels, drain off) and cannot be redefined")
        if name in seen:
            raise fail(key_node, f"scene {name!r} is defined twice")
        seen.add(name)
        description = ""
        if isinstance(value_node, yaml.MappingNode):
            fields = {str(k.value): (k, v) for k, v in value_node.value}
            if "rooms" in fields:
                raise fail(fields["rooms"][0], f"scene {name!r}: `rooms:` was renamed `channels:`")
            unknown = [k for k in fields if k not in SCENE_KEYS]
            if unknown:
                raise fail(
                    fields[unknown[0]][0],
                    f"scene {name!r}: unknown key(s) {', '.join(unknown)}; known: {', '.join(SCENE_KEYS)}",
                )
            if "description" in fields:
                desc_node = fields["description"][1]
                if not isinstance(desc_node, yaml.ScalarNode):
                    raise fail(desc_node, f"scene {name!r}: description must be one line of text")
                description = str(desc_node.value)
            list_node = fields["channels"][1] if "channels" in fields else None
        else:
            list_node = value_node
        out.append(Scene(name, _channel_list(list_node, name, fail), description))
    return out


def _channel_list(node: Any, scene: str, fail: Any) -> tuple[str, ...]:
    import yaml

    if node is None or (isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")):
        return ()
    if not isinstance(node, yaml.SequenceNode):
        raise fail(node, f"scene {scene!r}: channels must be a list, e.g. [review, deploy]")
    found: list[str] = []
    for item in node.value:
        if not isinstance(item, yaml.ScalarNode):
            raise fail(item, f"scene {scene!r}: each channel must be a name")
        raw = str(item.value)
        try:
            bare = raw[1:] if raw.startswith("#") else raw
            if bare == rooms.OPEN:
                raise UsageError("#open is the base channel; every session is in it already")
            name = rooms.channel_name(raw)
        except UsageError as e:
            raise fail(item, f"scene {scene!r}: {e}") from e
        if name not in found:
            found.append(name)
    return tuple(found)


def find(scenes: list[Scene], name: str, env: Mapping[str, str] | None = None) -> Scene:
    for scene in scenes:
        if scene.name == name:
            return scene
    file = path(env)
    if len(scenes) == 1:  # only the built-in: say where scenes are written, and how
        raise SceneFileError(
            f"unknown scene {name!r}: no scene is defined yet; write one in {file}, "
            f"e.g. `{name}: [{name}, deploy]` (the built-in scene is private)"
        )
    raise SceneFileError(f"unknown scene {name!r} in {file}; scenes: {', '.join(s.name for s in scenes)}")
