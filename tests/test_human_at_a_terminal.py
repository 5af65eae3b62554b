"""The human-only acts (approving a project's script sensors, making a human's mailbox, purging the
spool) need a human at a terminal: a controlling terminal, and a confirmation typed there. A process
with neither (an orphan left by `setsid -f`, or one started with no terminal by a parent that waits:
cron, a service, a script) may pass for the human in other ways, but none of these acts is its to do,
and it writes nothing trying (docs/architecture/sessions.md, "What a same-user process can still do")."""

from __future__ import annotations

import os
import secrets
import shlex
import subprocess
from pathlib import Path

import pytest

from attend.domain.core import rooms
from tests.support import ATTEND, World, in_pty, tree, wait_until

NEWCOMER = "newcomer"  # a user who never used attend here: no mailbox yet

# How the process is left without a terminal: handed to init with its parent gone (`setsid -f`), or in
# a session of its own while its parent waits (how cron or a service runs a command).
SHAPES = {
    "setsid -f": "setsid -f sh -c {inner}",
    "setsid --wait": "setsid --wait sh -c {inner}",
}

ACTS = {  # what is asked (an orphan: attend cannot even tell who calls)
    "send (a first mailbox)": ["send", "hello from nowhere"],
    "sensors trust": ["sensors", "trust"],
    "uninstall --purge": ["uninstall", "--purge", "--yes"],
}


def project_config(project: Path) -> None:
    path = project / ".claude" / "attend.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("sensors:\n  +lint:\n    script: ./tools/lint\n    interval: 60\n")
    script = project / "tools" / "lint"
    script.parent.mkdir(exist_ok=True)
    script.write_text("#!/bin/sh\necho ok\n")
    script.chmod(0o755)


def without_a_terminal(world: World, shape: str, argv: list[str], cwd: Path, user: str) -> tuple[int, str, str]:
    """Run attend ``argv`` as ``shape`` leaves it, its environment cleared (``env -i``), no terminal:
    its exit code, stdout and stderr (written to files: nothing of the test's is left open in it)."""
    box = world.tmp / "no-terminal" / secrets.token_hex(4)
    box.mkdir(parents=True)
    clean = ["env", "-i", f"HOME={world.home}", f"PATH={world.env['PATH']}", f"USER={user}"]
    command = " ".join(shlex.quote(a) for a in [*clean, ATTEND, *argv])
    done = f"{shlex.quote(str(box))}/rc"
    inner = f"{command} >{shlex.quote(str(box))}/out 2>{shlex.quote(str(box))}/err </dev/null; echo $? >{done}.tmp"
    inner += f"; mv {done}.tmp {done}"
    line = SHAPES[shape].format(inner=shlex.quote(inner))
    started = subprocess.run(
        ["bash", "-c", line],
        cwd=str(cwd),
        env=world.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 0, started.stderr
    wait_until(lambda: (box / "rc").exists(), f"attend {' '.join(argv)} ({shape}) to end")
    return int((box / "rc").read_text()), (box / "out").read_text(), (box / "err").read_text()


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("act", sorted(ACTS))
def test_a_process_without_a_terminal_does_no_human_only_act_and_writes_nothing(
    world: World, shape: str, act: str
) -> None:
    project = world.project("proj")
    project_config(project)
    target = world.tmp / "target"
    target.mkdir()
    assert world.attend("send", "the spool exists, with a message in it").returncode == 0
    argv = ACTS[act] + (["--target", str(target)] if "--purge" in ACTS[act] else [])
    before = tree(world.spool_root)
    rc, out, err = without_a_terminal(world, shape, argv, project, NEWCOMER)
    assert rc == 1 and out == "", (rc, out, err)
    [line] = err.splitlines()
    if shape == "setsid --wait":  # taken for the human, but no human is at a terminal to confirm it
        assert "for a human only" in line and "terminal" in line, line
    else:
        assert "for a human only" in line or "cannot tell who is calling" in line, line
    assert not (world.spool_root / "humans" / NEWCOMER).exists()  # no mailbox made
    assert not (world.home / ".config" / "attend" / "trusted.json").exists()  # no script approved
    assert tree(world.spool_root) == before  # not purged, and nothing written: no record, no mailbox
    assert len(world.spool.room_names(rooms.OPEN)) == 1


def test_a_reader_without_a_terminal_lists_without_making_a_mailbox(world: World) -> None:
    """Reading needs no mailbox: a first `inbox` with no terminal lists what is here, and writes nothing."""
    assert world.attend("send", "something to read").returncode == 0
    before = tree(world.spool_root)
    rc, out, err = without_a_terminal(world, "setsid --wait", ["inbox"], world.project("proj"), NEWCOMER)
    assert rc == 0 and "something to read" in out and err == "", (rc, out, err)
    assert not (world.spool_root / "humans" / NEWCOMER).exists()
    assert tree(world.spool_root) == before
    rc, out, err = without_a_terminal(world, "setsid -f", ["inbox"], world.project("proj"), NEWCOMER)
    assert rc == 1 and "cannot tell who is calling" in err, (rc, out, err)  # an orphan acts as no one
    assert tree(world.spool_root) == before


def test_a_process_without_a_terminal_uses_a_mailbox_its_human_made(world: World) -> None:
    """A script of the human's (cron, a service) sends and reads as the human once the human has made
    its mailbox at a terminal: only the making is refused to it."""
    rc, out, err = without_a_terminal(world, "setsid --wait", ["send", "from cron"], world.project("proj"), world.user)
    assert rc == 0 and out.startswith("sent "), (rc, out, err)
    assert world.spool.room_names(rooms.OPEN) != []


def test_a_newcomer_at_a_terminal_confirms_the_mailbox_once_and_is_asked_no_more(world: World) -> None:
    rc, shown = in_pty(world, "send", "my first message", answer="n", USER=NEWCOMER, mint=False)
    assert rc == 1 and "[y/N]" in shown and "not confirmed at the terminal" in shown, shown
    assert not (world.spool_root / "humans" / NEWCOMER).exists() and world.spool.room_names(rooms.OPEN) == []
    rc, shown = in_pty(world, "send", "my first message", answer="y", USER=NEWCOMER, mint=False)
    assert rc == 0 and "[y/N]" in shown and "sent " in shown, shown
    assert (world.spool_root / "humans" / NEWCOMER / "new").is_dir()
    rc, shown = in_pty(world, "send", "and a second", USER=NEWCOMER, mint=False)  # no answer is typed
    assert rc == 0 and "[y/N]" not in shown and "sent " in shown, shown
    rc, shown = in_pty(world, "inbox", USER=NEWCOMER, mint=False)
    assert rc == 0 and "[y/N]" not in shown, shown


def test_delivery_never_makes_a_humans_mailbox(world: World) -> None:
    """A record for a human without a mailbox waits in its room; the fan-out makes no mailbox."""
    from attend.domain.sessions import humans

    assert humans.deliver(world.spool, rooms.human_room(NEWCOMER), "1796557827.M000001P1Q0R00000000.h", "x") == []
    assert not (world.spool_root / "humans" / NEWCOMER).exists()
    assert os.path.isdir(world.spool_root / "humans" / world.user)  # the fixture's human made its own
