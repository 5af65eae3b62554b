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
    assert re.search(r"re:\s+\d{10}\.M", text)  # the reply is threaded
    home = Path(re.search(r"throwaway spool in (\S+)", text).group(1))  # type: ignore[union-attr]
    assert not home.exists() and not home.parent.parent.exists()
    assert not (world.spool_root / "rooms").exists()  # the user's own spool is untouched
