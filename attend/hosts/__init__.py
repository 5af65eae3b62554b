"""The hosts: the agent clients attend serves, each an adapter behind one interface (``base.Host``).

``HOSTS`` lists them in order; the identity rule asks each for the sessions in the caller's ancestry
and weighs them together, outermost first (docs/architecture/hosts.md). The rest of attend names a host only through
this registry: a new host is one more module here, listed in ``HOSTS`` (and its setup adapter,
attend/setup/hosts.py)."""

from __future__ import annotations

from attend.hosts.base import Host
from attend.hosts.claude import HOST as CLAUDE
from attend.hosts.codex import HOST as CODEX
from attend.hosts.gemini import HOST as GEMINI

__all__ = ["CLAUDE", "CODEX", "DEFAULT", "GEMINI", "HOSTS", "NAMES", "Host", "by_name", "of"]

HOSTS: tuple[Host, ...] = (CLAUDE, CODEX, GEMINI)
NAMES: tuple[str, ...] = tuple(host.name for host in HOSTS)

# The host of a session whose records name none (written before attend named hosts), and of a
# Claude Code config folder named by `--target`: Claude Code, the first host attend served.
DEFAULT = CLAUDE


def by_name(name: str | None) -> Host | None:
    return next((host for host in HOSTS if host.name == name), None)


def of(name: str | None) -> Host:
    """The host named, or ``DEFAULT`` for a session whose records name none (or a name no longer served)."""
    return by_name(name) or DEFAULT
