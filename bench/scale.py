"""A hundred sessions on one machine (issue 15): N sensor loops, each under its own stand-in session,
over a spool with history: 20,000 records in #open and 5,000 in each of 5 channels every loop belongs
to. Prints, for N loops beside 1 loop of the same run:

- idle CPU of all loops together over 30 s, in % of one core (goal for N=100: <= 1 %);
- the latency from the start of an operator's `attend send` process to the last loop printing the
  line, three broadcasts (goal: <= 150 ms);
- RSS per idle loop (goal: <= 20 MB).

Each stand-in session is the lightest one that resolves by the real ancestry walk: a shell that waits
for its session record (naming its own pid), then execs `attend run`, so the loop is the session.
CPU is read from /proc/<pid>/stat (utime + stime), not wall time. `--tree DIR` runs the loops and the
send from another checkout (its `attend` package first on PYTHONPATH), e.g. the branch point in a
temporary worktree, to measure a baseline in the same sitting.

Run: .venv/bin/python bench/scale.py [--n 100] [--idle 30] [--tree DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import shlex
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend import identity
from attend.domain.core import envelope
from attend.domain.core.envelope import Signal
from attend.domain.messages import channels
from attend.layout import LINK_BOUND, unique_name
from attend.spool import Spool
from bench._common import cleanup, tmpdir, world_env

CHANNELS = 5
OPEN_HISTORY = 20_000
CHANNEL_HISTORY = 5_000
ENTRY = "import sys; from attend.cli.entry import main; sys.argv[0] = 'attend'; sys.exit(main())"


def cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def seed_history(root: Path, room: str, count: int, start: float) -> None:
    """Write ``count`` old records straight into a room's new/ (no fsync: this is set-up, not a send)."""
    new = root / "rooms" / room / "new"
    for sub in ("tmp", "new", "cur"):
        (root / "rooms" / room / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
    sig = Signal("", "bench-human", "human", "bench@tty", "*", room, "", "history", 0.0)
    for i in range(count):
        name = unique_name(int((start + i * 0.01) * 1e9))
        data = envelope.render(sig.with_id(name, start + i * 0.01))
        fd = os.open(new / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, data)
        os.close(fd)


class World:
    """A private HOME and spool with the history, the loops, and a reader of their stdout."""

    def __init__(self, tree: Path | None) -> None:
        self.tmp = tmpdir()
        self.env = world_env(self.tmp)
        self.home = self.tmp / "home"
        self.proj = self.home / "proj"
        self.proj.mkdir()
        if tree is not None:
            self.env["PYTHONPATH"] = str(tree)
        self.root = self.home / ".cache" / "attend"
        config = self.home / ".config" / "attend"
        config.mkdir(parents=True)
        # Keep the history whole: the loops' retention sweep would otherwise cut #open to 10,000.
        (config / "config.yaml").write_text("retention:\n  max_per_room: 100000\n")
        self.spool = Spool.open(self.root)
        base = time.time() - 3 * 3600
        seed_history(self.root, "open", OPEN_HISTORY, base)
        for c in range(CHANNELS):
            seed_history(self.root, f"@team{c}", CHANNEL_HISTORY, base + c)
        self.loops: list[subprocess.Popen[bytes]] = []
        self.lines: list[list[tuple[float, str]]] = []
        self.sel = selectors.DefaultSelector()
        self.lock = threading.Lock()
        self.stop = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def attend(self, *args: str) -> list[str]:
        return [sys.executable, "-c", ENTRY, *args]

    def start_loops(self, n: int, batch: int = 10) -> None:
        for i in range(n):
            sid = str(uuid.uuid4())
            for c in range(CHANNELS):
                channels.add_member(self.spool, f"team{c}", sid)
            cmd = " ".join(shlex.quote(a) for a in self.attend("run"))
            loop = subprocess.Popen(
                ["sh", "-c", f"read _; exec {cmd}"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=self.env,
                cwd=str(self.proj),
            )
            assert loop.stdin and loop.stdout
            record = {
                "pid": loop.pid,
                "sessionId": sid,
                "cwd": str(self.proj),
                "procStart": identity.proc_start(loop.pid),
            }
            (self.home / ".claude" / "sessions" / f"{loop.pid}.json").write_text(json.dumps(record))
            with self.lock:
                self.lines.append([])
                self.loops.append(loop)
                self.sel.register(loop.stdout, selectors.EVENT_READ, len(self.loops) - 1)
            loop.stdin.write(b"go\n")
            loop.stdin.close()
            if i % batch == batch - 1 or i == n - 1:
                # A few at a time: a start-up costs ~100 ms of CPU, and 100 at once would thrash.
                self.wait(lambda: all(self.lines), 120)

    def _read(self) -> None:
        buffers: dict[int, bytes] = {}
        while not self.stop:
            with self.lock:
                ready = self.sel.select(0.05) if self.sel.get_map() else []
            if not ready:
                time.sleep(0.005) if not self.loops else None
                continue
            now = time.perf_counter()
            for key, _ in ready:
                i = key.data
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    with self.lock:
                        self.sel.unregister(key.fileobj)
                    continue
                data = buffers.get(i, b"") + chunk
                *whole, rest = data.split(b"\n")
                buffers[i] = rest
                for line in whole:
                    self.lines[i].append((now, line.decode("utf-8", "replace")))

    def wait(self, cond: object, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond():  # type: ignore[operator]
                return True
            time.sleep(0.01)
        return False

    def idle_cpu(self, seconds: float) -> float:
        """CPU of all loops together over ``seconds``, in % of one core."""
        pids = [p.pid for p in self.loops]
        before = sum(cpu_seconds(p) for p in pids)
        time.sleep(seconds)
        return (sum(cpu_seconds(p) for p in pids) - before) / seconds * 100

    def broadcast(self, body: str) -> float:
        """Seconds from the start of the operator's `attend send` to the last loop printing ``body``."""
        t0 = time.perf_counter()
        subprocess.run(self.attend("send", body), env=self.env, cwd=str(self.tmp), capture_output=True, check=True)

        def seen() -> list[float] | None:
            times = []
            for lines in self.lines:
                hit = [t for t, line in lines if body in line]
                if not hit:
                    return None
                times.append(hit[0])
            return times

        if not self.wait(lambda: seen() is not None, 120):
            missing = sum(1 for lines in self.lines if not any(body in line for _, line in lines))
            alive = sum(1 for p in self.loops if p.poll() is None)
            print(f"  {missing} loop(s) did not print {body!r} within 120 s ({alive} alive, {load()})", flush=True)
            return float("nan")
        return max(seen() or [t0]) - t0

    def close(self) -> None:
        for loop in self.loops:
            loop.terminate()
        for loop in self.loops:
            try:
                loop.wait(10)
            except subprocess.TimeoutExpired:
                loop.kill()
        self.stop = True
        self.reader.join(2)
        cleanup(self.tmp)


def measure(n: int, idle: float, tree: Path | None) -> dict[str, object]:
    world = World(tree)
    try:
        t = time.monotonic()
        world.start_loops(n)
        started = time.monotonic() - t
        time.sleep(12)  # past the start-up repair passes and the first housekeeping
        world.broadcast("warm-up")  # the first line carries the one-time reply hint
        time.sleep(LINK_BOUND + 10)  # past the repair pass that settles the warm-up's record: idle from here
        cpu = world.idle_cpu(idle)
        rss = [rss_mb(p.pid) for p in world.loops]
        lat = []
        for i in range(3):
            time.sleep(1.0)
            lat.append(world.broadcast(f"broadcast {i} {uuid.uuid4().hex[:6]}"))
        return {"n": n, "start": started, "cpu": cpu, "rss": statistics.mean(rss), "rss_max": max(rss), "lat": lat}
    finally:
        world.close()


def show(r: dict[str, object]) -> str:
    lat = ", ".join(f"{x * 1000:.0f}" for x in r["lat"])  # type: ignore[attr-defined]
    return (
        f"N={r['n']:<4} idle CPU {r['cpu']:6.2f} % of a core   broadcast -> last loop {lat} ms   "
        f"RSS {r['rss']:.1f} MB/loop (max {r['rss_max']:.1f})   start-up {r['start']:.0f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--idle", type=float, default=30.0)
    ap.add_argument("--tree", type=Path, default=None, help="run the loops from this checkout")
    args = ap.parse_args()
    tree = args.tree.resolve() if args.tree else None
    print(f"tree {tree or Path(__file__).resolve().parent.parent}   {load()}", flush=True)
    one = measure(1, args.idle, tree)
    print(show(one), f"  {load()}", flush=True)
    many = measure(args.n, args.idle, tree)
    print(show(many), f"  {load()}", flush=True)
    print(
        f"goals for N={args.n}: idle CPU <= 1 % ({'met' if many['cpu'] <= 1 else 'NOT met'}), "  # type: ignore[operator]
        f"last broadcast line <= 150 ms ({'met' if max(many['lat']) <= 0.150 else 'NOT met'}), "  # type: ignore[arg-type]
        f"RSS <= 20 MB ({'met' if many['rss'] <= 20 else 'NOT met'})"  # type: ignore[operator]
    )


if __name__ == "__main__":
    main()
