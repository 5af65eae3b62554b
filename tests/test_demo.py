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
    assert not (world.spool_root / "rooms").exists()  # the user's own spool is untouched
