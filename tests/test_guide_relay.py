"""The relay's docs, run as written: the user guide's "try it on one machine" recipe (two spools, one
nats-server, a message across) and relay.md's key recipe (the nkeys library the extra installs, not a
NATS tool); and relay.md installs the extra from the clone, and says nats-server needs the admin
password in its environment."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import pty_run, require_tools

REPO = Path(__file__).resolve().parent.parent
GUIDE = REPO / "docs" / "guide" / "relay.md"
DESIGN = REPO / "docs" / "architecture" / "relay.md"
NATS_DIRS = ("/usr/sbin", "/usr/local/sbin")

pytestmark = pytest.mark.relay


def block(path: Path, heading: str, nth: int = 0) -> str:
    """The ``nth`` ```sh block under ``heading`` (a line of the file), as a reader copies it: written
    inside a list item, its indentation is the list's, not the commands'."""
    import textwrap

    text = path.read_text(encoding="utf-8").split(heading, 1)[1]
    found = re.findall(r"```sh\n(.*?)```", text, re.S)
    assert len(found) > nth, f"no sh block {nth} under {heading!r} in {path.name}"
    return textwrap.dedent(str(found[nth]))


def processes_under(folder: Path) -> list[int]:
    """The processes whose working folder is under ``folder`` (what the recipe started and left)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/cwd").startswith(str(folder)):
                out.append(int(pid))
        except OSError:
            continue
    return out


def test_the_guides_one_machine_recipe_carries_a_message_across_and_leaves_nothing_running(tmp_path: Path) -> None:
    path = os.pathsep.join([str(Path(sys.executable).parent), *NATS_DIRS, "/usr/bin", "/bin"])
    require_tools("nats-server") if not shutil.which("nats-server", path=path) else None
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    home.mkdir()
    scratch.mkdir()
    env = {"HOME": str(home), "USER": "newcomer", "LANG": "C.UTF-8", "PATH": path, "TMPDIR": str(scratch)}
    recipe = block(GUIDE, "## Try it on one machine")
    (tmp_path / "try-relay.sh").write_text(recipe)
    try:
        try:  # at a terminal: each host's first use asks there, once, to make the human's mailbox
            rc, out = pty_run(["bash", "-e", "try-relay.sh"], {**env, "TERM": "xterm"}, tmp_path, answer="y")
        except AssertionError as e:  # say where the recipe stood, and what its relays said
            said = [f"{p.name}: {p.read_text()[-1500:]}" for p in scratch.rglob("*.log")]
            raise AssertionError(f"the recipe did not end: {e} {said}") from None
        assert rc == 0, out[-3000:]
        assert out.count("[y/N]") == 2, out  # alpha's send, beta's first inbox
        assert "relay for host alpha: ok" in out and "relay for host beta: ok" in out, out
        shown = out.split("\n[#open] ", 1)[1]
        assert shown.startswith("newcomer@alpha (human)") and "message: hello from alpha" in shown, shown
        left = processes_under(scratch)
        assert left == [], f"the recipe left processes running: {left}"
    finally:
        for pid in processes_under(scratch):
            os.kill(pid, 9)


def test_relay_md_makes_a_hosts_key_with_the_nkeys_library_as_written(tmp_path: Path) -> None:
    snippet = block(DESIGN, "## Server setup for two machines", nth=1)
    assert "nk -gen" not in DESIGN.read_text(encoding="utf-8")  # a NATS tool Debian does not package
    venv = tmp_path / "clone" / ".venv" / "bin"
    venv.mkdir(parents=True)
    python = venv / "python"  # the snippet names the clone's venv, as the docs do: this one's, with nkeys
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    run = subprocess.run(
        ["bash", "-e", "-c", snippet],
        cwd=tmp_path / "clone",
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    seed_file = home / ".config" / "attend" / "relay.nk"
    assert oct(seed_file.stat().st_mode & 0o777) == "0o600"
    import nkeys

    seed = seed_file.read_bytes().strip()
    assert seed.startswith(b"SU") and run.stdout.strip() == nkeys.from_seed(bytearray(seed)).public_key.decode()


def test_relay_md_installs_the_extra_from_the_clone_and_gives_the_server_its_password() -> None:
    text = " ".join(DESIGN.read_text(encoding="utf-8").split())
    assert "pip install 'attend-bus[relay]'" not in text  # not on the package index
    assert "pip install -e '.[relay]'" in text
    assert "reads `$ATTEND_ADMIN_PASSWORD` from its own environment" in text
