"""`attend doctor`: each reason a session would not receive, with its fix, and the repair pass."""

from __future__ import annotations

import json

from attend.domain import delivery, sessions
from tests.support import World


def checks(out: str) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in json.loads(out)["checks"]}


def test_a_human_at_a_terminal_gets_the_machine_checks_and_skips_the_session_ones(world: World) -> None:
    out = world.cli("doctor", "--json")
    found = checks(out.stdout)
    assert found["attend on PATH"]["status"] == "ok"
    assert found["wiring"]["status"] == "fail" and "attend install" in found["wiring"]["fix"]
    assert found["spool"]["status"] == "ok"
    assert found["sensor loop"]["status"] == "skip"
    assert out.returncode == 1  # the wiring fails
    world.cli("install")
    again = world.cli("doctor")
    assert again.returncode == 0, again.stdout
    assert "ok   wiring" in again.stdout


def test_a_session_that_is_not_enrolled_is_told_how_to_enrol(world: World) -> None:
    world.cli("install")
    s = world.session("proj")
    out = s.attend("doctor", "--json")
    found = checks(out.stdout)
    assert found["enrollment"]["status"] == "fail" and "attend run" in found["enrollment"]["fix"]
    assert found["sensor loop"]["status"] == "warn" and "Monitor" in found["sensor loop"]["fix"]
    assert found["MCP marker"]["status"] == "warn"
    assert out.rc == 1


def test_monitor_disabled_by_the_environment_is_reported(world: World) -> None:
    out = world.cli("doctor", "--json", env={"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
    monitor = checks(out.stdout)["Monitor"]
    assert monitor["status"] == "warn" and "drain" in monitor["fix"]
    assert checks(world.cli("doctor", "--json").stdout)["Monitor"]["status"] == "ok"  # positive control


def test_attend_missing_from_path_is_a_failure_with_its_fix(world: World) -> None:
    import sys
    from pathlib import Path

    from attend.domain.context import Context
    from attend.verbs import doctor

    result = doctor.run(Context.for_env({**world.env, "PATH": "/nonexistent"}), doctor.DoctorRequest())
    path_check = next(c for c in result.checks if c.name == "attend on PATH")
    assert path_check.status == "fail" and "PATH" in path_check.fix
    assert Path(sys.executable).parent.is_dir()


def test_the_repair_pass_restores_a_lost_delivery(world: World) -> None:
    world.cli("install")
    a, b = world.session("proj"), world.session("proj")
    spool = world.spool
    for s in (a, b):
        sessions.enroll(spool, world.context(s).who(), "join")
    assert a.attend("send", "first").rc == 0
    delivery.repair(spool, b.session_id)  # b has reconciled up to the first message
    sent = a.attend("send", "--json", "second")
    assert sent.rc == 0, sent.stderr
    second = json.loads(sent.stdout)["id"]
    # A crash between the room record and the fan-out: b's link to the second message is lost.
    for folder in ("new", "claimed", "cur"):
        for name in spool.listing(b.session_id, folder):
            if name.startswith(second):
                (spool.root / "sessions" / b.session_id / folder / name).unlink()
    assert not spool.has_delivery(b.session_id, second)
    out = b.attend("doctor", "--json")
    report = json.loads(out.stdout)
    assert report["repaired"] == 1, out.stderr
    assert spool.has_delivery(b.session_id, second)
