"""Relay benchmarks (docs/architecture/relay.md), two hosts on this machine through a nats-server on
loopback, each host its own HOME, spool, ATTEND_HOST and `attend relay`:

1. send on host A -> a sensor-loop line on host B, fsync on (goal p50 <= 25 ms, p99 <= 250 ms);
2. sustained sends at RATE msg/s for SECONDS from A to #open, from SENDERS processes: A's outbox and
   B's arrivals sampled each second (goal: no growth at 1,000 msg/s for 60 s), the CPU each part
   took, and where a send's time goes (its fsyncs, timed in the senders);
3. the relay's idle CPU and RSS over IDLE seconds (goal <= 0.1 % of a core, RSS <= 40 MB);
4. `attend send` to #open with a relay configured against the same without (goal: <= 10 % more).

Run: .venv/bin/python bench/relay.py [samples=200] [rate=1000] [seconds=60] [idle=60] [runs=30] [senders=6]
     .venv/bin/python bench/relay.py idle [seconds=60] [sittings=3]   # part 3 alone, on fresh relays
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import stat
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend import identity, layout
from attend.domain.core.envelope import Signal
from attend.domain.messages import delivery
from attend.relay import check, settings, subjects
from attend.spool import Spool
from bench._common import ATTEND, cleanup, interleaved, pct, tmpdir, world_env
from bench.sensor import cpu_seconds, rss_mb

NATS = "/usr/sbin/nats-server" if os.path.exists("/usr/sbin/nats-server") else "nats-server"
PACE_GAP = 0.25
SENDERS = 6  # sender processes: one process's sends wait on their own fsyncs (three each), several overlap


class FsyncClock:
    """os.fsync timed by what it syncs (a file or a folder), in a sender process."""

    def __init__(self) -> None:
        self.seconds = {"file": 0.0, "folder": 0.0}
        self.count = {"file": 0, "folder": 0}
        self.real = os.fsync
        os.fsync = self.fsync  # type: ignore[assignment]

    def fsync(self, fd: int) -> None:
        kind = "folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        t = time.perf_counter()
        self.real(fd)
        self.seconds[kind] += time.perf_counter() - t
        self.count[kind] += 1


def load(root: str, rate: float, seconds: float) -> None:
    """A sender process: ``rate`` sends a second to #open for ``seconds``, as host A; prints one JSON
    line: how many, the wall time sending, its CPU, and its fsyncs' time by kind."""
    spool = Spool.open(root)
    sig = Signal("", "bench-human", "human", "bench", "*", "open", root, "", 0.0)
    clock = FsyncClock()
    sent, busy, start = 0, 0.0, time.perf_counter()
    cpu0 = time.process_time()
    while (now := time.perf_counter() - start) < seconds:
        while sent < int(now * rate):
            t = time.perf_counter()
            delivery.send(spool, sig._replace(body=f"load {os.getpid()} {sent}"), ["open"])
            busy += time.perf_counter() - t
            sent += 1
        time.sleep(0.001)
    doc = {"sent": sent, "busy": busy, "cpu": time.process_time() - cpu0, "fsync": clock.seconds, "n": clock.count}
    print(json.dumps(doc))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    users = [{"user": "admin", "password": "admin"}] + [
        {"user": h, "password": h, "permissions": subjects.permissions(h)} for h in ("hosta", "hostb")
    ]
    conf = {
        "listen": f"127.0.0.1:{port}",
        "jetstream": {"store_dir": str(tmp / "js")},
        "accounts": {"ATTEND": {"jetstream": "enabled", "users": users}},
    }
    (tmp / "nats.conf").write_text(json.dumps(conf))
    proc = subprocess.Popen([NATS, "-c", str(tmp / "nats.conf")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"nats://127.0.0.1:{port}"
    for _ in range(200):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    return proc, url


def host(tmp: Path, name: str, url: str) -> tuple[dict[str, str], Path]:
    env = world_env(tmp / name)
    env["ATTEND_HOST"] = name
    home = tmp / name / "home"
    (home / "proj").mkdir(parents=True, exist_ok=True)
    cfg = home / ".config" / "attend"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "pw").write_text(name)
    (cfg / "pw").chmod(0o600)
    # The governors pace a loop's lines per sender (docs/architecture/sensors.md): off, to time the transport.
    (cfg / "config.yaml").write_text(
        f"relay:\n  servers: [{url}]\n  user: {name}\n  password_file: {cfg / 'pw'}\n"
        "governor:\n  message: {cooldown: 0, max_per_window: 100000}\n"
        "  sender: {burst: 100000, cooldown: 0, max_per_minute: 100000}\n"
    )
    return env, home


def start_relay(env: dict[str, str], home: Path) -> subprocess.Popen[bytes]:
    argv = [ATTEND, "relay"]
    if os.environ.get("RELAY_PROFILE"):  # where each relay spends its CPU: <dir>/<host>-<ns>.prof (cProfile)
        out = Path(os.environ["RELAY_PROFILE"]) / f"{env.get('ATTEND_HOST')}-{time.time_ns()}.prof"
        argv = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "attend", "relay"]
    relay = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = home / ".cache" / "attend" / "relay" / "state.json"
    for _ in range(600):
        try:
            if json.loads(state.read_text()).get("state") == "connected":
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    return relay


def start_loop(env: dict[str, str], home: Path) -> subprocess.Popen[str]:
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
    record = {"pid": loop.pid, "sessionId": str(uuid.uuid4()), "cwd": str(home / "proj")}
    record["procStart"] = identity.proc_start(loop.pid)
    (home / ".claude" / "sessions" / f"{loop.pid}.json").write_text(json.dumps(record))
    loop.stdin.write("go\n")
    loop.stdin.flush()
    loop.stdout.readline()  # the banner
    return loop


def main() -> None:
    args = [float(a) for a in sys.argv[1:]]
    samples, rate, seconds, idle, runs, senders_f = (args + [200, 1000, 60, 60, 30, SENDERS][len(args) :])[:6]
    senders = int(senders_f)
    tmp = tmpdir()
    srv, url = server(tmp)
    procs: list[subprocess.Popen[bytes] | subprocess.Popen[str]] = [srv]
    try:
        admin = settings.parse({"servers": [url], "user": "admin"})
        admin.user, admin.password_file = "admin", None
        opts_pw = tmp / "admin-pw"
        opts_pw.write_text("admin")
        opts_pw.chmod(0o600)
        admin.password_file = str(opts_pw)
        check.provision(admin, ["hosta", "hostb"])
        env_a, home_a = host(tmp, "hosta", url)
        env_b, home_b = host(tmp, "hostb", url)
        relay_a = start_relay(env_a, home_a)
        relay_b = start_relay(env_b, home_b)
        procs += [relay_a, relay_b]
        loop = start_loop(env_b, home_b)
        procs.append(loop)
        assert loop.stdout
        spool_a = Spool.open(home_a / ".cache" / "attend")
        layout._HOST = "hosta"  # this process sends as host A
        sig = Signal("", "bench-human", "human", "bench", "*", "open", str(home_a), "", 0.0)

        lat = []
        for i in range(int(samples) + 1):
            time.sleep(PACE_GAP)
            t0 = time.perf_counter()
            delivery.send(spool_a, sig._replace(body=f"ping {i}"), ["open"])
            while f"ping {i}" not in (line := loop.stdout.readline()):  # a sensor's line may come first
                assert line, "the loop ended"
            lat.append(time.perf_counter() - t0)
        lat = sorted(lat[1:])
        print(
            f"send on A -> loop line on B  p50 {statistics.median(lat) * 1000:.1f} ms  p99 {pct(lat, 99) * 1000:.1f} ms"
            f"  max {lat[-1] * 1000:.1f} ms  (n={int(samples)}; goal p50 <= 25, p99 <= 250)"
        )

        outbox = home_a / ".cache" / "attend" / "relay" / "outbox" / "new"
        arrivals = home_b / ".cache" / "attend" / "rooms" / "open" / "new"
        base_b = len(os.listdir(arrivals))
        sizes: list[int] = []
        behind: list[int] = []  # sent by A (its room) and not yet in B's room, each second
        room_a = home_a / ".cache" / "attend" / "rooms" / "open" / "new"
        base_a = len(os.listdir(room_a))
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(1.0):
                sizes.append(len(os.listdir(outbox)))
                behind.append((len(os.listdir(room_a)) - base_a) - (len(os.listdir(arrivals)) - base_b))

        cpu_before = {p.pid: cpu_seconds(p.pid) for p in (srv, relay_a, relay_b)}
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        workers = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "load",
                    str(home_a / ".cache" / "attend"),
                    str(rate / senders),
                    str(seconds),
                ],
                env={**env_a, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(senders)
        ]
        docs = [json.loads(w.communicate()[0].strip() or "{}") for w in workers]
        stop.set()
        sampler.join()
        cpu = {
            name: cpu_seconds(p.pid) - cpu_before[p.pid]
            for name, p in (("server", srv), ("relay A", relay_a), ("relay B", relay_b))
        }
        total = sum(d.get("sent", 0) for d in docs)
        achieved = total / seconds
        print(
            f"sustained {achieved:.0f} msg/s for {seconds:g} s (asked {rate:g}, {senders} sender processes): "
            f"A's outbox each second median {statistics.median(sizes):.0f}, max {max(sizes)}, last {sizes[-1]}; "
            f"B behind A median {statistics.median(behind):.0f}, max {max(behind)}, last {behind[-1]}"
        )
        t0 = time.perf_counter()
        while len(os.listdir(arrivals)) - base_b < len(os.listdir(room_a)) - base_a and time.perf_counter() - t0 < 120:
            time.sleep(0.05)
        print(f"  B had every one {time.perf_counter() - t0:.2f} s after the last send")
        if total:
            per = {k: sum(d["fsync"][k] for d in docs) / total * 1000 for k in ("file", "folder")}
            busy = sum(d["busy"] for d in docs) / total * 1000
            syncs = sum(d["n"]["folder"] for d in docs) / total
            send_cpu = sum(d["cpu"] for d in docs)
            print(
                f"  a send: {busy:.2f} ms of wall time, of it the record's fsync {per['file']:.2f} ms and {syncs:.1f} "
                f"folder fsyncs {per['folder']:.2f} ms; the rest {busy - per['file'] - per['folder']:.2f} ms"
            )
            print(
                f"  CPU over the {seconds:g} s: senders {send_cpu:.1f} s ({send_cpu / total * 1000:.2f} ms a send), "
                + ", ".join(f"{k} {v:.1f} s" for k, v in cpu.items())
                + f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
            )
        loop.send_signal(signal.SIGTERM)  # its lines are not read from here on
        for _ in range(600):
            if not os.listdir(outbox):
                break
            time.sleep(0.1)

        # The relay's own pace: a backlog queued while it was stopped, then the time to publish it all.
        relay_a.send_signal(signal.SIGTERM)
        relay_a.wait(30)
        backlog = 5000
        for i in range(backlog):
            delivery.send(spool_a, sig._replace(body=f"backlog {i}"), ["open"])
        t0 = time.perf_counter()
        relay_a = start_relay(env_a, home_a)
        procs.append(relay_a)
        while os.listdir(outbox):
            time.sleep(0.05)
        took = time.perf_counter() - t0
        print(f"a backlog of {backlog} published in {took:.1f} s from the relay's start: {backlog / took:.0f} msg/s")

        time.sleep(2.0)
        print(idle_sitting(relay_a.pid, idle))

        relay_a.send_signal(signal.SIGTERM)
        relay_a.wait(30)
        plain_env, plain_home = host(tmp, "plain", url)
        (plain_home / ".config" / "attend" / "config.yaml").unlink()

        def timed(env: dict[str, str], home: Path) -> float:
            t = time.perf_counter()
            subprocess.run([ATTEND, "send", "hi"], env=env, cwd=str(home / "proj"), capture_output=True, check=True)
            return time.perf_counter() - t

        res = interleaved(
            {"relay": lambda: timed(env_a, home_a), "none": lambda: timed(plain_env, plain_home)}, int(runs)
        )
        with_relay, without = statistics.median(res["relay"]), statistics.median(res["none"])
        print(
            f"attend send to #open: relay configured {with_relay * 1000:.1f} ms, none {without * 1000:.1f} ms: "
            f"{(with_relay / without - 1) * 100:+.1f} %  (runs={int(runs)}; goal <= +10 %)"
        )
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)  # a relay under cProfile writes its profile as it stops
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
        asyncio.set_event_loop(None)
        cleanup(tmp)


def idle_sitting(pid: int, seconds: float) -> str:
    """The relay ``pid``'s CPU over ``seconds`` of doing nothing asked of it, with the load beside it."""
    load0 = os.getloadavg()[0]
    cpu0 = cpu_seconds(pid)
    time.sleep(seconds)
    cpu = cpu_seconds(pid) - cpu0
    return (
        f"relay idle over {seconds:g} s: CPU {cpu:.3f} s ({cpu / seconds * 100:.3f} % of a core), "
        f"RSS {rss_mb(pid):.1f} MB, load average {load0:.1f} -> {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores  (goal <= 0.1 %, <= 40 MB)"
    )


def idle_only(seconds: float, sittings: int) -> None:
    """Part 3 alone: two hosts' relays connected and idle (each watches the other's presence), relay A's
    CPU over ``seconds``, each sitting after 5 s of settling, with the load average beside it."""
    tmp = tmpdir()
    srv, url = server(tmp)
    procs: list[subprocess.Popen[bytes]] = [srv]
    try:
        pw = tmp / "admin-pw"
        pw.write_text("admin")
        pw.chmod(0o600)
        admin = settings.parse({"servers": [url], "user": "admin", "password_file": str(pw)})
        check.provision(admin, ["hosta", "hostb"])
        env_a, home_a = host(tmp, "hosta", url)
        env_b, home_b = host(tmp, "hostb", url)
        relay_a, relay_b = start_relay(env_a, home_a), start_relay(env_b, home_b)
        procs += [relay_a, relay_b]
        time.sleep(5.0)
        for _ in range(sittings):
            print(idle_sitting(relay_a.pid, seconds), flush=True)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
        cleanup(tmp)


if __name__ == "__main__":
    if sys.argv[1:2] == ["load"]:
        load(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    elif sys.argv[1:2] == ["idle"]:
        given = [float(a) for a in sys.argv[2:4]]
        idle_seconds, sittings = (given + [60.0, 3.0][len(given) :])[:2]
        idle_only(idle_seconds, int(sittings))
    else:
        main()
