"""`attend demo` runs end to end in a throwaway spool and cleans up after itself."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support import World


def test_the_demo_shows_both_conduits_and_a_thread_then_cleans_up(world: World) -> None:
    out = world.attend("demo", timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "[attend sensor=peers priority=low] message from" in text  # the sensor loop's line
    assert "message(s) from peers, not your user:" in text  # the drain's reason
    # Step 6 reads the thread back whole: the message from its root, the reply indented under it.
    thread = text.split("6. The thread, read back", 1)[1].split("\nDone:", 1)[0]
    body = [line for line in thread.splitlines() if line.strip() and not line.lstrip()[:2].isdigit()]
    assert [line.strip() for line in body[1:3]] == ["build is green; deploying web at 3pm", "api is ready for it"]
    assert body[2].index("api") > body[1].index("build"), thread  # the reply indented under what it answers
    assert "1 reply under" in thread
    home = Path(re.search(r"throwaway spool in (\S+)", text).group(1))  # type: ignore[union-attr]
    assert not home.exists() and not home.parent.parent.exists()
    assert world.spool.rooms() == []  # the user's own spool is untouched


def test_demo_keep_leaves_two_live_stand_ins_that_answer_and_says_how_to_reach_them(world: World) -> None:
    import os
    import signal
    import subprocess

    from tests.support import ATTEND, wait_until

    out = world.attend("demo", "--keep", timeout=180)
    assert out.returncode == 0, out.stderr
    text = out.stdout.split("\nA sandbox stays for 10 minutes: ", 1)[1]
    names = text.split(" are live in #demo", 1)[0].split(" and ")
    chat_line = next(line.strip() for line in text.splitlines() if line.strip().endswith("attend chat --room '#demo'"))
    assignments = dict(word.split("=", 1) for word in chat_line.split()[:3])
    pid = int(text.rsplit("(or: kill ", 1)[1].split(")", 1)[0])
    sandbox = Path(assignments["HOME"]).parent
    env = {**world.env, **assignments}

    def there(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([ATTEND, *args], env=env, capture_output=True, text=True, timeout=60)

    try:
        peers = there("peers").stdout
        assert all(name in peers for name in names) and "#demo" in peers, peers
        assert there("send", "--to", names[0], "are you there?").returncode == 0
        wait_until(lambda: f"[direct] {names[0]}" in there("inbox").stdout, "a canned reply in the human's mailbox")
    finally:
        os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not sandbox.exists(), "the sandbox to remove itself")
    assert world.spool.rooms() == []  # the user's own spool is untouched
