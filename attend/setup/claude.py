"""Claude Code's setup adapter: install's own target (``--target``, else ``$CLAUDE_CONFIG_DIR`` or
``~/.claude``), written by attend.setup.install (settings.json, ``.claude.json`` or a project's
``.mcp.json``, the hook scripts, the skill). ``attend permissions``' own report checks it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from attend.hosts.claude import HOST
from attend.setup import install as core
from attend.setup.adapter import HostSetup, Wiring


class ClaudeSetup(HostSetup):
    name = HOST.name
    primary = True

    def folder(self, env: Mapping[str, str]) -> Path:
        return Path(core.requested_folder(None, env))

    def install(self, env: Mapping[str, str], attend_exe: str, dry_run: bool, target: str | None) -> Wiring:
        where = core.resolve_target(target, env, make=True)
        notes = []
        if where.is_project:
            notes.append(
                f"{where.claude_json} and the hook scripts run `attend` from PATH, not this venv's path, so they "
                "work for whoever clones the project: each user puts attend on PATH (attend doctor prints the line)"
            )
        return Wiring(core.install(where, dry_run=dry_run, attend_exe=attend_exe), notes)

    def uninstall(self, env: Mapping[str, str], attend_exe: str, target: str | None, spool_root: Path) -> Wiring:
        return Wiring(core.uninstall(core.resolve_target(target, env), spool_root, purge=False))


SETUP = ClaudeSetup()
