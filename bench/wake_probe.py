"""Probe Claude Code's asyncRewake Stop hooks with the real client and the scripted model (not a
benchmark: what docs/architecture/conduits.md records about the waiting conduit comes from here).

    .venv/bin/python bench/wake_probe.py timeout   # which `timeout` values the client honours
    .venv/bin/python bench/wake_probe.py block 6   # a Stop block beside an asyncRewake hook that sleeps 6 s
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.fake_api import Request, done
from tests.e2e.harness import E2EWorld

HOOK = """#!/bin/sh
# Wake once: wait for the go file, print a line, exit 2; later runs exit 0 at once.
cat > "{dir}/payload.$$"
[ -e "{dir}/woke" ] && exit 0
while [ ! -e "{dir}/go" ]; do sleep 0.05; done
: > "{dir}/woke"; echo "WOKEN-BY-HOOK at $(date +%s.%N)" >&2; exit 2
"""


def world(tmp: Path, timeout: float) -> tuple[E2EWorld, Path]:
    e2e = E2EWorld(tmp)
    d = tmp / "probe"
    d.mkdir()
    hook = d / "hook.sh"
    hook.write_text(HOOK.format(dir=d))
    hook.chmod(0o755)
    entry = {"type": "command", "command": str(hook), "asyncRewake": True, "timeout": timeout}
    e2e.settings({"hooks": {"Stop": [{"hooks": [entry]}]}, "permissions": {"allow": ["Bash"]}})
    return e2e, d


def probe_timeout(timeout: float) -> str:
    tmp = Path(tempfile.mkdtemp(prefix="wake-probe-"))
    e2e, d = world(tmp, timeout)

    def first(req: Request) -> str:
        return "first turn"

    def woke(req: Request) -> str:
        return "woken turn"

    c = e2e.start([first, woke, done("x")], timeout=40)
    time.sleep(4)  # the turn has ended and the hook waits; then let it wake
    (d / "go").touch()
    run = c.wait()
    e2e.close()
    hit = [t for t in run.user_texts() if "WOKEN-BY-HOOK" in t]
    return f"timeout={timeout}: turns={len(run.turns)} woke={len(hit)} rc={run.rc} timed_out={run.timed_out}"


def probe_block(sleep: float) -> None:
    """A blocking Stop hook and an asyncRewake one that sleeps, at one turn end: when does the block's
    continuation reach the model? (Measured: after the sleep, so the waiter must leave on a block.)"""
    tmp = Path(tempfile.mkdtemp(prefix="wake-probe-"))
    e2e = E2EWorld(tmp)
    d = tmp / "probe"
    d.mkdir()
    block, slow = d / "block.sh", d / "slow.sh"
    block.write_text(
        f"#!/bin/sh\ncat >/dev/null\n[ -e {d}/blocked ] && exit 0\n: > {d}/blocked\n"
        """echo '{"decision":"block","reason":"BLOCKED"}'\n"""
    )
    slow.write_text(f"#!/bin/sh\ncat >/dev/null\nsleep {sleep}\nexit 0\n")
    for f in (block, slow):
        f.chmod(0o755)
    hooks = [
        {"hooks": [{"type": "command", "command": str(block), "timeout": 30}]},
        {"hooks": [{"type": "command", "command": str(slow), "asyncRewake": True, "timeout": 600}]},
    ]
    e2e.settings({"hooks": {"Stop": hooks}})
    at: dict[str, float] = {}

    def first(req: Request) -> str:
        at["end"] = time.monotonic()
        return "first"

    def second(req: Request) -> str:
        at["continued"] = time.monotonic()
        return "second"

    run = e2e.claude([first, second, done("x")], timeout=60)
    e2e.close()
    print(f"async hook sleeps {sleep:g} s: the block's continuation came {at['continued'] - at['end']:.2f} s after")
    print(f"the turn ended (rc {run.rc})")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "timeout"
    if what == "block":
        probe_block(float(sys.argv[2]) if len(sys.argv) > 2 else 6)
    elif what == "timeout":
        for t in [float(a) for a in sys.argv[2:]] or [86400, 2147483, 2147484]:
            print(probe_timeout(t), flush=True)
