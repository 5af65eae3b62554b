"""A host's setup adapter: what ``attend install`` writes for one host, how ``uninstall`` withdraws
it, and what ``permissions`` and ``doctor`` check there.

Each host attend serves (attend/hosts) has one, in ``attend/setup/<host>.py``, keyed by the host's
name and listed in ``attend/setup/hosts.py``. The verbs ask these, never a host by name. The
identity side of a host (``attend.hosts.base.Host``) sits far below this layer and imports the
standard library only; this side imports tomlkit and the install machinery, so it lives here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attend.setup import install as core
from attend.setup import plan as planned
from attend.setup.checks import HostCheck, HostWiring, read_json


@dataclass
class Wiring:
    """What install or uninstall did for one host: the files changed, and what else it said."""

    outcome: core.Outcome
    notes: list[str] = field(default_factory=list)


class HostSetup:
    """One host's part of install, uninstall, permissions and doctor."""

    name: str = ""  # the host's name (attend.hosts: ``Host.name``)
    # The host whose folder `--target` names and whose files are install's own report (its main
    # fields, and `permissions`' own checks): Claude Code. Every other host reports as one of `others`.
    primary: bool = False

    def folder(self, env: Mapping[str, str]) -> Path:
        """The host's config folder: install with no ``--host`` wires the hosts whose folder exists."""
        raise NotImplementedError

    def install(self, env: Mapping[str, str], attend_exe: str, dry_run: bool, target: str | None) -> Wiring:
        raise NotImplementedError

    def uninstall(self, env: Mapping[str, str], attend_exe: str, target: str | None, spool_root: Path) -> Wiring:
        raise NotImplementedError

    def inspect(self, env: Mapping[str, str], attend: str) -> HostWiring | None:
        """The host's wiring, when its folder exists or attend wired it; ``attend`` names the running
        attend in the fixes. None: nothing to report (the primary host is ``permissions``' own report)."""
        return None


class PlanSetup(HostSetup):
    """A host whose files are one ``Plan`` (attend.setup.plan): a JSON file merged, files copied, and
    perhaps a TOML file edited."""

    # Checks that follow from the others (Codex's hook trust) and so alone do not show attend wired
    # the folder.
    derived_checks: tuple[str, ...] = ()

    def plan(self, env: Mapping[str, str], attend_exe: str) -> planned.Plan:
        raise NotImplementedError

    def install_notes(self, env: Mapping[str, str]) -> list[str]:
        """What install says of the host besides its files (Gemini's idle wake)."""
        return []

    def checks(self, p: planned.Plan, doc: dict[str, Any], env: Mapping[str, str], fix: str) -> list[HostCheck]:
        """The host's own checks of its files; ``doc`` is the JSON file, ``fix`` the install command."""
        raise NotImplementedError

    def install(self, env: Mapping[str, str], attend_exe: str, dry_run: bool, target: str | None) -> Wiring:
        p = self.plan(env, attend_exe)
        done = planned.install(p, env, dry_run=dry_run)
        p.notes.extend(self.install_notes(env))
        return Wiring(done, p.notes)

    def uninstall(self, env: Mapping[str, str], attend_exe: str, target: str | None, spool_root: Path) -> Wiring:
        return Wiring(planned.uninstall(self.plan(env, attend_exe)))

    def inspect(self, env: Mapping[str, str], attend: str) -> HostWiring | None:
        p = self.plan(env, core.attend_executable(env))
        target = p.target
        present, recorded = planned.presence(p)
        if not (present or recorded):
            return None
        fix = f"{attend} install --host {p.host}"
        checks: list[HostCheck] = []
        warnings: list[str] = []
        doc = read_json(target.settings, warnings)
        if warnings:
            checks.append(
                HostCheck("settings", False, warnings[0], f"repair that file (a JSON object), then run {fix}")
            )
        checks += self.checks(p, doc, env, fix)
        wired = recorded or any(c.ok for c in checks if c.name not in self.derived_checks)
        return HostWiring(p.host, str(target.dir), wired, checks, all(c.ok for c in checks))
