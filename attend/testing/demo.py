"""`attend demo`: two stand-in sessions talk through a throwaway spool, and the demo narrates.

Everything is real: each session is a process with its own session record, every step runs the
installed `attend` as that session's child, and the spool is a real maildir tree. The temporary
home is removed at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from attend.testing.standin import Result, StandIn

Say = Callable[[str], None]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ATTEND_", "XDG_"))}
    bindir = str(Path(sys.executable).parent)
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        USER=os.environ.get("USER", "you"),
        PATH=bindir + os.pathsep + os.environ.get("PATH", ""),
    )
    return env


def _check(step: str, result: Result) -> Result:
    if result.rc != 0:
        raise RuntimeError(f"{step} failed (exit {result.rc}): {result.stderr.strip() or result.stdout.strip()}")
    return result


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines())


def _wait_for(path: Path, needle: str, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        if needle in text:
            return text
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {needle!r} in {path}")


def run(say: Say) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="attend-demo-"))
    home = tmp / "home"
    (home / ".claude" / "sessions").mkdir(parents=True)
    env = _env(home)
    web, api = tmp / "projects" / "web", tmp / "projects" / "api"
    web.mkdir(parents=True)
    api.mkdir(parents=True)
    a = StandIn(home, web, env)
    b = StandIn(home, api, env)
    loop_pid = None
    try:
        say(f"attend demo: a throwaway spool in {home / '.cache' / 'attend'}")
        say("Two stand-in Claude sessions start, each a real process with its own session record.")
        for s in (a, b):
            who = json.loads(_check("whoami", s.attend("whoami", "--json")).stdout)
            say(f"  {s.cwd.name}: session {who['session_id'][:8]}…, resolved by {who['resolved_by']}")

        say("\n1. Both join #demo, which enrolls them (a session that cannot receive cannot send).")
        for s in (a, b):
            say(_indent(_check("join", s.attend("join", "demo")).stdout))

        say("\n2. The api session arms its sensor loop, as it would under the Monitor tool.")
        out = tmp / "api-run.out"
        loop_pid = b.spawn(["attend", "run"], out)
        say(_indent(_wait_for(out, "[attend]").splitlines()[0]))

        say("\n3. The web session sends to #open.")
        sent = json.loads(
            _check("send", a.attend("send", "--json", "--", "build is green; deploying web at 3pm")).stdout
        )
        say(f"    sent {sent['id']} to {sent['scope']} ({sent['delivered']} recipient)")
        line = _wait_for(out, "message from").splitlines()
        say("   The api session's loop prints one line, which Monitor hands to its model:")
        say(_indent(next(x for x in line if "message from" in x)))

        say("\n4. The api session replies; reply threads to the newest message it was shown.")
        reply = json.loads(_check("reply", b.attend("reply", "--json", "--", "api is ready for it")).stdout)
        say(f"    sent {reply['id']} re {reply['re']}")

        say("\n5. The web session has no loop: its Stop hook drains at the turn end.")
        payload = json.dumps({"session_id": a.session_id, "stop_hook_active": False, "background_tasks": []})
        drained = _check("drain", a.attend("inbox", "--drain", "--format", "hook", stdin=payload)).stdout
        reason = json.loads(drained)["reason"]
        say(_indent(reason))

        say("\n6. The thread, read back (attend thread <id>: from its root, each reply under what it answers):")
        say(_indent(_check("thread", a.attend("thread", reply["id"])).stdout))
        say("\nDone: every message is a file under rooms/ and sessions/, readable with any maildir reader.")
    finally:
        if loop_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(loop_pid, signal.SIGTERM)
        a.close()
        b.close()
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------- `attend demo --keep`: a sandbox

KEEP_MINUTES = 10.0
CANNED = (
    "On it: I'll look and report back here.",
    "Done on my side; the tests pass.",
    "Good question. I'd split it into two steps; shall I start?",
    "Noted. Nothing blocks me for now.",
)


def keep(say: Say, minutes: float = KEEP_MINUTES) -> Path:
    """Start the sandbox in a process of its own (it outlives this command) and say how to reach it;
    returns its home. Two stand-in sessions join #demo and answer each message from anyone else with
    a canned reply, through their sensor loops, for ``minutes``; then the sandbox removes itself."""
    import subprocess

    tmp = Path(tempfile.mkdtemp(prefix="attend-sandbox-"))
    ready = tmp / "ready.json"
    subprocess.Popen(
        [sys.executable, "-m", "attend.testing.demo", "serve", str(tmp), str(minutes)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp / "sandbox.log", "wb"),  # noqa: SIM115  # the sandbox's own, for as long as it runs
        start_new_session=True,  # not ended with this terminal's command
    )
    deadline = time.monotonic() + 60.0
    while not ready.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the sandbox did not start; see {tmp / 'sandbox.log'}")
        time.sleep(0.1)
    info = json.loads(ready.read_text())
    home = tmp / "home"
    there = f"HOME={home} XDG_CACHE_HOME={home / '.cache'} XDG_CONFIG_HOME={home / '.config'}"
    say(f"\nA sandbox stays for {minutes:g} minutes: {' and '.join(info['names'])} are live in #demo there,")
    say("and answer whatever you write them with a canned reply. Talk to them from chat:")
    say(f"    {there} attend chat --room '#demo'")
    say(f'or: {there} attend send --to {info["names"][0]} "hello"   (and attend peers, reply, mute, thread …)')
    say(f"It removes itself after {minutes:g} minutes (or: kill {info['pid']}).")
    return home


def _human_mailbox(home: Path) -> None:
    """The mailbox of the human who asked for the sandbox, in the sandbox's throwaway spool, as its
    first use there would make it: the sandbox is that human's own, so its chat and send ask nothing
    (making a mailbox in the human's real spool is confirmed at its terminal: attend.domain.sessions.humans)."""
    from attend import identity
    from attend.domain.sessions import humans
    from attend.domain.sessions.context import Context
    from attend.layout import HUMANS

    env = _env(home)
    user = humans.mailbox(identity.human_id(env))
    if user is not None:
        Context(env=env).spool.make_maildir(user, HUMANS)


def serve(tmp: Path, minutes: float) -> None:
    """The sandbox process: two stand-in sessions with sensor loops, a canned reply to each message from
    anyone else, until ``minutes`` have passed or SIGTERM; then everything is removed."""
    home = tmp / "home"
    (home / ".claude" / "sessions").mkdir(parents=True)
    env = _env(home)
    sessions = []
    loops: list[int] = []
    stop = False

    def end(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, end)
    try:
        for project in ("web", "api"):
            cwd = tmp / "projects" / project
            cwd.mkdir(parents=True)
            s = StandIn(home, cwd, env)
            sessions.append(s)
            _check("join", s.attend("join", "demo"))
        names = [json.loads(_check("whoami", s.attend("whoami", "--json")).stdout)["display"] for s in sessions]
        outs = []
        for s in sessions:
            out = tmp / f"{s.cwd.name}-run.out"
            loops.append(s.spawn(["attend", "run"], out))
            _wait_for(out, "[attend]")
            outs.append(out)
        _human_mailbox(home)
        (tmp / "ready.json").write_text(json.dumps({"names": names, "pid": os.getpid()}))
        read = [0 for _ in sessions]
        replies = 0
        deadline = time.monotonic() + minutes * 60
        while not stop and time.monotonic() < deadline:
            for i, s in enumerate(sessions):
                text = outs[i].read_text(errors="replace")
                fresh, read[i] = text[read[i] :], len(text)
                for line in fresh.splitlines():
                    said = line.partition(" message from ")[2]
                    if said and not any(said.startswith(n + " ") for n in names):  # never each other
                        s.attend("reply", "--", CANNED[replies % len(CANNED)])
                        replies += 1
            time.sleep(0.3)
    finally:
        for pid in loops:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for s in sessions:
            s.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    serve(Path(sys.argv[2]), float(sys.argv[3]))
