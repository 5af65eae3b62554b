"""Probe Claude Code's asyncRewake Stop hooks with the real client and the scripted model (not a
benchmark: what docs/architecture/conduits.md records about the waiting conduit comes from here).

    .venv/bin/python bench/wake_probe.py timeout   # which `timeout` values the client honours
    .venv/bin/python bench/wake_probe.py busy      # an exit 2 while the session is mid-turn
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.fake_api import Request, bash, call, done, tool_search
from tests.e2e.harness import E2EWorld, latest_user_texts, user_texts

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


def probe_busy() -> None:
    """Monitor wakes the session; during that turn the hook exits 2. Where does its text land?"""
    tmp = Path(tempfile.mkdtemp(prefix="wake-probe-"))
    e2e, d = world(tmp, 600)
    g = d / "g"
    seen: list[str] = []

    def busy(req: Request) -> object:
        seen.append("busy turn began: " + " | ".join(t[:80] for t in latest_user_texts(req)))
        (d / "go").touch()
        deadline = time.monotonic() + 10
        while not (d / "woke").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)  # the hook has exited 2 while this turn is still open
        return bash("echo still-busy")

    def record(label: str):
        def step(req: Request) -> str:
            seen.append(label + ": " + " | ".join(t[:120] for t in latest_user_texts(req)))
            return done(label)

        return step

    monitor = f"while [ ! -e {g} ]; do sleep 0.1; done; echo EVENT"
    script = [
        tool_search("Monitor"),
        call("Monitor", {"command": monitor, "description": "probe", "timeout_ms": 60000}),
        record("turn ends"),
        busy,
        record("after tool in busy turn"),
        record("next"),
        record("next2"),
        record("next3"),
    ]
    c = e2e.start(script, timeout=60)
    time.sleep(6)
    g.touch()
    run = c.wait()
    e2e.close()
    for s in seen:
        print(s)
    hits = [t for t in user_texts(run.turns) if "WOKEN-BY-HOOK" in t]
    print(f"feedback texts: {len(hits)}; turns {len(run.turns)}; rc {run.rc}")
    payloads = sorted(d.glob("payload.*"))
    for p in payloads:
        try:
            doc = json.loads(p.read_text())
            print("stop payload stop_hook_active:", doc.get("stop_hook_active"))
        except ValueError:
            pass


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "timeout"
    if what == "timeout":
        for t in [float(a) for a in sys.argv[2:]] or [86400, 2147483, 2147484]:
            print(probe_timeout(t), flush=True)
    else:
        probe_busy()
