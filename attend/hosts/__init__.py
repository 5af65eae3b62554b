"""The hosts: the agent clients attend serves, each an adapter behind one interface (``base.Host``).

``HOSTS`` lists them in order; the identity rule asks each for the caller's session, and the nearest
one in the ancestry wins (docs/architecture/hosts.md)."""

from __future__ import annotations

from attend.hosts.base import Host
from attend.hosts.claude import HOST as CLAUDE
from attend.hosts.codex import HOST as CODEX
from attend.hosts.gemini import HOST as GEMINI

HOSTS: tuple[Host, ...] = (CLAUDE, CODEX, GEMINI)


def by_name(name: str) -> Host | None:
    return next((host for host in HOSTS if host.name == name), None)
