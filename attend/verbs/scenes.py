"""scenes: list the scenes in scenes.yaml, with the built-in ``private``. Read-only."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.sessions.context import Context
from attend.domain.settings import scenes

DESCRIPTION = (
    "List the scenes (named sets of channels) with their descriptions, the built-in 'private' first, "
    "and say where scenes.yaml is ($XDG_CONFIG_HOME/attend/scenes.yaml, else ~/.config/attend/scenes.yaml)."
)
EXAMPLES = (  # the end of `attend scenes --help` (CLI only)
    ("attend scenes", "the scenes and their channels"),
    ("attend scenes --json", "the same, for a script"),
)
PARAMS: dict[str, str] = {}


@dataclass(frozen=True)
class ScenesRequest:
    """scenes takes no parameters."""


@dataclass
class SceneRow:
    name: str
    channels: list[str]
    description: str
    builtin: bool


@dataclass
class Scenes:
    path: str
    scenes: list[SceneRow]
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: ScenesRequest) -> Scenes:
    found = scenes.load(ctx.env)
    rows = [SceneRow(s.name, list(s.channels), s.description, s.builtin) for s in found]
    return Scenes(str(scenes.path(ctx.env)), rows)
