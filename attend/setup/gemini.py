"""Gemini CLI's setup adapter (``~/.gemini``): ``settings.json`` gets ``mcpServers.attend`` (trusted),
the SessionStart hook that records the session for the gemini process, and the AfterAgent drain.
Install also says whether the idle wake is on, which the user's own settings decide
(docs/architecture/hosts.md); ``permissions`` and ``doctor`` check the server and both hooks."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attend.hosts import gemini
from attend.setup import install as core
from attend.setup import plan as planned
from attend.setup.adapter import PlanSetup
from attend.setup.checks import HostCheck, hook, server

GEMINI_START = "attend-gemini-start.sh"
TRUST_CHECK = "folder trust"


class GeminiSetup(PlanSetup):
    name = gemini.HOST.name
    derived_checks = (TRUST_CHECK,)  # Gemini's verdict on the folder: it alone does not show attend wired

    def folder(self, env: Mapping[str, str]) -> Path:
        return Path(gemini.gemini_home(env))

    def plan(self, env: Mapping[str, str], attend_exe: str) -> planned.Plan:
        target = planned.target_for(self.name, self.folder(env), "settings.json", "settings.json", env)
        ours = planned.fragment("gemini.json", target, attend_exe, (GEMINI_START, core.DRAIN_SCRIPT, core.EDIT_SCRIPT))
        passed = {k: env[k] for k in ("ATTEND_HOME",) if env.get(k)}
        if passed:
            ours["mcpServers"]["attend"]["env"] = passed
        copies = [
            planned.hook_copy(target, GEMINI_START),
            planned.hook_copy(target, core.DRAIN_SCRIPT),
            planned.hook_copy(target, core.EDIT_SCRIPT),
            planned.skill_copy(target),
        ]
        return planned.Plan(self.name, target, ours, copies)

    def install_notes(self, env: Mapping[str, str]) -> list[str]:
        return [wake_note(env)]

    def checks(self, p: planned.Plan, doc: dict[str, Any], env: Mapping[str, str], fix: str) -> list[HostCheck]:
        target = p.target
        return [
            server(doc.get("mcpServers"), f"{target.settings} mcpServers.attend", fix),
            hook(target, doc, "SessionStart", GEMINI_START, "records the session for its gemini process", fix),
            hook(target, doc, "AfterAgent", core.DRAIN_SCRIPT, "the turn-end drain", fix),
            trust_check(os.getcwd(), env),
        ]


SETUP = GeminiSetup()


def trust_check(cwd: str, env: Mapping[str, str]) -> HostCheck:
    """Gemini's own verdict on this folder: in a folder it does not trust it starts no MCP server and
    shows attend's as "Disabled", however well the files are wired."""
    trusted, why = gemini.folder_trust(cwd, env)
    if trusted:
        return HostCheck(TRUST_CHECK, True, why)
    return HostCheck(
        TRUST_CHECK,
        False,
        f"{why}: here Gemini starts no MCP server (it lists attend as Disabled)",
        "run gemini in this folder and choose to trust it (or /permissions there); "
        "a folder trusted once stays trusted (docs/guide/files.md)",
    )


def wake_note(env: Mapping[str, str]) -> str:
    """What install says of a Gemini session's idle wake: available where the user's settings turn a
    finished background command into a turn, which is an experimental Gemini setting attend never
    turns on for the user (docs/architecture/hosts.md)."""
    why = gemini.steering(None, env)
    if why is None:
        return "idle wake: on (steering is enabled: an idle interactive session is woken through attend wait --once)"
    return (
        f"idle wake: off ({why}); messages arrive at each turn end. To have an idle session woken, set "
        'experimental.modelSteering true and tools.shell.backgroundCompletionBehavior "inject" in '
        f"{os.path.join(gemini.gemini_home(env), 'settings.json')} (experimental Gemini settings; attend does not "
        "turn them on)"
    )
