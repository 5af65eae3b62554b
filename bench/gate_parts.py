"""The gate made of parts (issue 33) against the tree before it, in one run: `attend send` as a whole
process, a library send fanned out to 50 sessions, the empty turn-end drain (the hook), and `attend mcp`
spawn to its first tools/list answer. The two trees' runs alternate, so machine load hits both alike.

The tree before is a temporary worktree at the commit before the split (made when absent), run from its
checkout by PYTHONPATH with this checkout's interpreter, as bench/send.py's ``--tree`` does; this tree is
run the same way, so both pay the same launcher. Both trees' modules are compiled first, so the figures
measure imports, not compilation.

Run: .venv/bin/python bench/gate_parts.py [--runs N] [--before DIR] [--commit REV]

Figures, 2026-12-06, 31 runs each, load average 3 on two cores (docs/benchmarks.md has two loaded
sittings beside it):

    python -c pass  median   11.68 ms   CPU  10.91 ms
    attend send (a human's, to #open)
       before   median   27.11 ms (2.32x bare)   CPU  25.16 ms
       after    median   27.66 ms (2.37x bare)   CPU  25.79 ms
    empty drain (the turn-end hook)
       before   median   28.20 ms (2.41x bare)   CPU  26.64 ms
       after    median   28.68 ms (2.46x bare)   CPU  27.09 ms
    attend mcp, spawn to the tools/list answer
       before   median   25.59 ms (2.19x bare)
       after    median   26.93 ms (2.31x bare)
    library send, fan-out to 50 enrolled sessions: CPU per send (200 sends, best of 3 processes)
       before      7.23 ms
       after       7.42 ms
    the send's hot loop in the gate: publish (no fsync) + 50 links, CPU per send (median of 10 processes)
       before     2.118 ms
       after      2.194 ms
    the gate's own import (import attend.spool, its dependencies loaded)
       before   median  1335 us   min  1143 us
       after    median  1801 us   min  1580 us
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from bench._common import ENTRY, cleanup, enrolled, make_world  # noqa: E402

PY = sys.executable

# One library send fanned out to 50 enrolled sessions, timed in a process of the tree on PYTHONPATH.
FANOUT = """
import sys, time, tempfile
from pathlib import Path
try:  # the domain's floors (issue 33); the tree before has a flat domain
    from attend.domain.sessions import sessions
    from attend.domain.sessions.context import Context
except ImportError:
    from attend.domain import sessions
    from attend.domain.context import Context
from attend.identity import Identity
from attend.spool import Spool
from attend.verbs import send

n = int(sys.argv[1])
tmp = Path(tempfile.mkdtemp(prefix="attend-bench-"))
spool = Spool.open(tmp / "spool")
for i in range(50):
    sessions.enroll(spool, Identity("agent", f"sess-{i:02d}", f"/p/{i % 5}", "bench", True), "run")
import os
from attend.identity import human_id
spool.make_maildir(human_id(os.environ), "humans")  # the human's mailbox, made once at a terminal
ctx = Context(spool=spool, env=dict(os.environ), cwd=str(tmp))
send.run(ctx, send.SendRequest("warm-up"))
t = time.process_time()  # CPU: the gate's share, free of the disk's fsync waits
for i in range(n):
    send.run(ctx, send.SendRequest(f"message {i}"))
dt = time.process_time() - t
assert sum(len(spool.listing(f"sess-{i:02d}", "new")) for i in range(50)) == 50 * (n + 1)
import shutil
shutil.rmtree(tmp, ignore_errors=True)
print(dt / n)
"""


# The send's hot loop alone, in the gate: one record published (without its fsyncs) and linked into 50
# maildirs, CPU per send. What the split could slow per call, free of the disk and the rest of a send.
HOT = """
import sys, time, tempfile, shutil
from pathlib import Path
from attend.spool import Spool
tmp = Path(tempfile.mkdtemp(prefix="attend-bench-"))
sp = Spool.open(tmp / "spool")
sids = [f"{i:08d}-0000-0000-0000-000000000000" for i in range(50)]
for sid in sids:
    sp.make_maildir(sid)
sp.make_room("open")
n = int(sys.argv[1])
t = time.process_time()
for i in range(n):
    name = sp.publish(["open"], b"x" * 300, sync=False)
    assert all(ok is True for _sid, ok in sp.link_deliveries("open", name, sids))
dt = time.process_time() - t
shutil.rmtree(tmp)
print(dt / n)
"""

# The gate's own import, in a process that has loaded what it needs besides (the standard library's
# modules, the layout, the errors): the one module it was against its face and parts.
IMPORT = """
import time, contextlib, fcntl, collections.abc, errno, stat
import attend.layout, attend.errors
t = time.perf_counter()
import attend.spool
print(time.perf_counter() - t)
"""


def before_tree(path: Path, commit: str) -> Path:
    if not (path / "attend" / "spool.py").exists():
        subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", str(path), commit], check=True)
    return path


def timed(argv: list[str], env: dict[str, str], stdin: str = "", cwd: str | None = None) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system of the child) and stdout of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert r.returncode == 0, r.stderr[-500:]
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, r.stdout


def mcp_spawn(env: dict[str, str], cwd: str) -> float:
    """Seconds from spawning `attend mcp` to its tools/list answer."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        [PY, "-m", "attend", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
        bufsize=1,
        cwd=cwd,  # not a checkout: `-m` puts the working folder ahead of PYTHONPATH
    )
    assert proc.stdin and proc.stdout

    def ask(n: int, method: str, params: dict[str, object]) -> dict[str, object]:
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())  # type: ignore[no-any-return]

    info = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
    ask(1, "initialize", info)
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    proc.stdin.flush()
    assert "result" in ask(2, "tools/list", {})
    wall = time.perf_counter() - t
    proc.stdin.close()
    proc.wait(timeout=10)
    return wall


def line(name: str, walls: list[float], cpus: list[float] | None, base: float) -> str:
    wall = statistics.median(walls)
    cpu = f"   CPU {statistics.median(cpus) * 1000:6.2f} ms" if cpus else ""
    return f"   {name:<8} median {wall * 1000:7.2f} ms ({wall / base:.2f}x bare){cpu}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--before", type=Path, default=Path("/tmp/house-before"))
    ap.add_argument("--commit", default="05433af", help="the tree before the house (the floors, the parts)")
    args = ap.parse_args()
    trees = {"before": before_tree(args.before.resolve(), args.commit), "after": HERE}
    for tree in trees.values():
        subprocess.run([PY, "-m", "compileall", "-q", str(tree / "attend")], check=True, stdout=subprocess.DEVNULL)

    env, spool, home = make_world()
    envs = {name: {**env, "PYTHONPATH": str(tree)} for name, tree in trees.items()}
    proj = str(home / "proj")
    send_argv = [PY, "-c", ENTRY, "send", "bench message"]
    drain_argv = [PY, "-c", ENTRY, "inbox", "--drain", "--format", "hook"]
    walls: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}

    def record_run(key: str, wall: float, cpu: float) -> None:
        walls.setdefault(key, []).append(wall)
        cpus.setdefault(key, []).append(cpu)

    for _ in range(10):
        for name in trees:
            walls.setdefault(f"hot {name}", []).append(
                float(timed([PY, "-c", HOT, "300"], envs[name], cwd=str(home))[2])
            )
    for _ in range(args.runs):
        for name in trees:
            walls.setdefault(f"import {name}", []).append(
                float(timed([PY, "-c", IMPORT], envs[name], cwd=str(home))[2])
            )
    # A human's sends first (this process is no session yet): the library fan-out, then the command.
    for _ in range(3):
        for name in trees:
            out = timed([PY, "-c", FANOUT, "200"], envs[name], cwd=str(home))[2]
            walls.setdefault(f"fanout {name}", []).append(float(out))
    for name in trees:  # a first send makes the spool and the room: no timed run pays for them
        timed(send_argv, envs[name], cwd=proj)
    for _ in range(args.runs):
        record_run("bare", *timed([PY, "-c", "pass"], env)[:2])
        for name in trees:
            record_run(f"send {name}", *timed(send_argv, envs[name], cwd=proj)[:2])

    # The drain acts only for the session among its ancestors: this process stands in for its client.
    sid = enrolled(spool, home)
    ctypes.CDLL(None).prctl(15, b"claude", 0, 0, 0)  # PR_SET_NAME
    from attend.identity import proc_start

    record = {"pid": os.getpid(), "sessionId": sid, "cwd": proj, "procStart": proc_start(os.getpid())}
    (home / ".claude" / "sessions" / f"{os.getpid()}.json").write_text(json.dumps(record))
    payload = json.dumps({"session_id": sid, "stop_hook_active": False, "background_tasks": []})
    for name in trees:  # the sends above reach the new session too: its first drain shows them
        timed(drain_argv, envs[name], stdin=payload, cwd=proj)
    for _ in range(args.runs):
        for name in trees:
            wall, cpu, out = timed(drain_argv, envs[name], stdin=payload, cwd=proj)
            assert out == "", out
            record_run(f"drain {name}", wall, cpu)
    for _ in range(max(3, args.runs // 3)):
        for name in trees:
            walls.setdefault(f"mcp {name}", []).append(mcp_spawn(envs[name], str(home)))

    base = statistics.median(walls["bare"])
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"gate parts vs {args.commit} ({args.runs} runs each, interleaved; load {load})")
    print(f"python -c pass  median {base * 1000:7.2f} ms   CPU {statistics.median(cpus['bare']) * 1000:6.2f} ms")
    for what, title in (("send", "attend send (a human's, to #open)"), ("drain", "empty drain (the turn-end hook)")):
        print(title)
        for name in trees:
            print(line(name, walls[f"{what} {name}"], cpus[f"{what} {name}"], base))
    print("attend mcp, spawn to the tools/list answer")
    for name in trees:
        print(line(name, walls[f"mcp {name}"], None, base))
    print("library send, fan-out to 50 enrolled sessions: CPU per send (200 sends, best of 3 processes)")
    for name in trees:
        print(f"   {name:<8} {min(walls[f'fanout {name}']) * 1000:7.2f} ms")
    print("the send's hot loop in the gate: publish (no fsync) + 50 links, CPU per send (median of 10 processes)")
    for name in trees:
        print(f"   {name:<8} {statistics.median(walls[f'hot {name}']) * 1000:7.3f} ms")
    print("the gate's own import (import attend.spool, its dependencies loaded)")
    for name in trees:
        got = sorted(walls[f"import {name}"])
        print(f"   {name:<8} median {statistics.median(got) * 1e6:5.0f} us   min {got[0] * 1e6:5.0f} us")
    cleanup(home.parent)


if __name__ == "__main__":
    main()
