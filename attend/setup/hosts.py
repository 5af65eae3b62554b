"""The setup adapters, one per host (attend/setup/<host>.py, each a ``adapter.HostSetup`` keyed by the
host's name), in ``attend.hosts.HOSTS``' order. ``install``, ``uninstall``, ``permissions`` and
``doctor`` ask these, never a host by name: a new host adds its adapter here."""

from __future__ import annotations

from collections.abc import Mapping

from attend.setup.adapter import HostSetup
from attend.setup.claude import SETUP as CLAUDE
from attend.setup.codex import SETUP as CODEX
from attend.setup.gemini import SETUP as GEMINI

ADAPTERS: tuple[HostSetup, ...] = (CLAUDE, CODEX, GEMINI)
NAMES: tuple[str, ...] = tuple(a.name for a in ADAPTERS)
PRIMARY: HostSetup = next(a for a in ADAPTERS if a.primary)  # Claude Code: `--target` names its folder


def by_name(name: str) -> HostSetup | None:
    return next((a for a in ADAPTERS if a.name == name), None)


def detected(env: Mapping[str, str]) -> list[str]:
    """The hosts this user has: its config folder exists (each client makes it at its first run, and
    Claude Code's own install asks for it the same way)."""
    return [a.name for a in ADAPTERS if a.folder(env).is_dir()]
