"""The idle loop's CPU with the built-in sensors on (context reading a 2 MB transcript, keepwarm armed,
both at short intervals) against peers only (both turned off), two loops side by side over the same
idle seconds, so the machine's load weighs on both alike. The scale budget (bench/sensor.py: an idle
loop's CPU <= 0.05 s per 60 s) still holds for each.

Run: .venv/bin/python bench/sensors.py [idle seconds]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend import identity
from attend.domain.attention import keepwarm
from attend.spool import Spool
from bench._common import ATTEND, cleanup, tmpdir, world_env
from bench.sensor import cpu_seconds, rss_mb

SENSES_ON = "sensors:\n  context: {interval: 20}\n  keepwarm: {interval: 10}\n"  # their shortest useful
PEERS_ONLY = "sensors:\n  -context:\n  -keepwarm:\n"


def start(config: str, transcript: bool) -> tuple[subprocess.Popen[str], Path]:
    tmp = tmpdir()
    env = world_env(tmp)
    home = tmp / "home"
    (home / "proj").mkdir()
    (home / ".config" / "attend").mkdir(parents=True)
    (home / ".config" / "attend" / "config.yaml").write_text(config)
    sid = str(uuid.uuid4())
    loop = subprocess.Popen(
        ["sh", "-c", f'read _; exec "{ATTEND}" run'],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=str(home / "proj"),
        text=True,
        bufsize=1,
    )
    assert loop.stdin and loop.stdout
    record = {"pid": loop.pid, "sessionId": sid, "cwd": str(home / "proj"), "procStart": identity.proc_start(loop.pid)}
    (home / ".claude" / "sessions" / f"{loop.pid}.json").write_text(json.dumps(record))
    if transcript:
        path = identity.transcript_path(env, sid, str(home / "proj"))
        assert path is not None
        path.parent.mkdir(parents=True)
        filler = json.dumps({"type": "user", "message": {"content": [{"type": "tool_result", "content": "x" * 2000}]}})
        usage = {"input_tokens": 10, "cache_read_input_tokens": 90_000, "cache_creation_input_tokens": 500}
        answer = json.dumps({"type": "assistant", "message": {"model": "claude-opus-4-5", "usage": usage}})
        path.write_text((filler + "\n") * 1000 + answer + "\n")
        keepwarm.turn_on(Spool.open(home / ".cache" / "attend"), sid, 6 * 3600, time.time())
    loop.stdin.write("go\n")
    loop.stdin.flush()
    loop.stdout.readline()  # the banner
    return loop, tmp


def main() -> None:
    idle = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    on, on_tmp = start(SENSES_ON, transcript=True)
    off, off_tmp = start(PEERS_ONLY, transcript=False)
    time.sleep(2.0)  # start-up done: both are idle from here
    c0 = {p.pid: cpu_seconds(p.pid) for p in (on, off)}
    time.sleep(idle)
    used = {p.pid: cpu_seconds(p.pid) - c0[p.pid] for p in (on, off)}
    for name, p in (("built-in sensors on", on), ("peers only         ", off)):
        print(f"idle loop, {name} over {idle:g} s  CPU {used[p.pid]:.3f} s   RSS {rss_mb(p.pid):.1f} MB")
    print("(goal, each: CPU <= 0.05 s per 60 s idle, RSS <= 40 MB)")
    for p in (on, off):
        p.terminate()
        p.wait(10)
    cleanup(on_tmp)
    cleanup(off_tmp)


if __name__ == "__main__":
    main()
