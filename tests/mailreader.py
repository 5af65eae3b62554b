"""mutt under tmux, for tests that read the spool as a mail reader does: a private HOME and muttrc,
so nothing of the machine's own mail setup leaks in; the screen is read with `tmux capture-pane`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support import wait_until

MUTTRC = """\
set sort=threads
set ascii_chars=yes
set folder={home}
set spoolfile=/dev/null
set mbox_type=Maildir
set charset=utf-8
set help=no
set status_format="-%r-Mutt: [Msgs:%m New:%n] (%s) %f"
"""


class MuttScreen:
    """One private tmux server (its own socket) showing `mutt -R -f <maildir>`."""

    def __init__(self, home: Path) -> None:
        home.mkdir()
        self.home = home
        self.muttrc = home / "muttrc"
        self.muttrc.write_text(MUTTRC.format(home=home))
        self.socket = str(home / "tmux.sock")
        self.env = {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "TERM": "xterm"}
        self.started = False

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=30,
        )

    def open(self, maildir: Path, messages: int, width: int = 110, height: int = 16) -> str:
        """Show ``maildir`` in a fresh window; the screen once mutt's status line counts them all."""
        if self.started:
            self.tmux("kill-session", "-t", "mail")
        command = f"mutt -n -R -F {self.muttrc} -f {maildir}"
        r = self.tmux("new-session", "-d", "-s", "mail", "-x", str(width), "-y", str(height), command)
        assert r.returncode == 0, r.stderr
        self.started = True
        done = f"[Msgs:{messages} "

        def shown() -> str:
            screen = self.screen()
            return screen if done in screen else ""

        return str(wait_until(shown, lambda: f"{done!r} on the screen:\n{self.screen()}"))

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "mail").stdout

    def close(self) -> None:
        if self.started:
            self.tmux("kill-server")


def index_lines(screen: str) -> list[str]:
    """The index lines, without the status line."""
    return [line for line in screen.splitlines() if line.strip() and "-Mutt:" not in line]


def row(lines: list[str], text: str) -> tuple[str, int]:
    """The index line showing ``text``, and how deep in its thread it sits (where mutt's ``->`` is;
    -1 for a thread's first message). Siblings sent within one second have the same Date, and mutt
    may show them in either order, so tests ask for depth, not position."""
    (line,) = [line for line in lines if text in line]
    return line, line.find("->")
