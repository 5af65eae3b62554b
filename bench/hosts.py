"""Benchmarks for Codex CLI and Gemini CLI as hosts, with the goals they are held to:

1. The cost of identity per host: a whole `attend send` from each host's shell tool, as a ratio to
   `python -c pass` measured in the same place (goal <= 2.5x, as a Claude session's send). The host
   is a stand-in with the same evidence (a process named `codex` holding the thread's writer lock;
   a `node … gemini` process with attend's SessionStart record; a Claude Code session record), so
   the walk is the one the real clients get; the shell tool's `bash` sits between, as in the clients.
2. send -> next-turn delivery, per host, with the real clients against the scripted models: from the
   model's turn ending (the script step that ends it returns) to the next model request carrying the
   message the human sent during the turn. p50 over the runs.
3. send -> a Codex idle wake: a thread idle in `codex app-server`; from `attend send` returning to
   the model request carrying the message (the waiter's `codex queue`, then the app-server's own
   pick-up of its queue). p50 over the wakes.
4. send -> a Gemini idle self-wake: the real Gemini CLI in its interactive UI (tmux), settings with
   steering on; the model keeps `attend wait --once` running in the background. From `attend send`
   returning to the model request carrying the message (the waiter's claim and exit, then Gemini's
   "User steering update" turn). p50 over the wakes.

5. send -> a Codex idle wake for the interactive TUI as a person runs it (in tmux), whose threads run
   in the shared app-server daemon it starts: the daemon picks up `codex queue` at once. The run
   stops the daemon and its pid-update-loop afterwards (both outlive the TUI).

Run: .venv/bin/python bench/hosts.py [--runs N] [--only identity|delivery|wake|gemini-wake|codex-tui-wake]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._common import ATTEND, cleanup, tmpdir  # noqa: E402

# Inside the stand-in host: enroll, then time `attend send` and `python -c pass` from a bash child,
# interleaved; print the medians as JSON.
INNER = r"""
import json, os, resource, statistics, subprocess, sys, time
attend, runs = sys.argv[1], int(sys.argv[2])
cpu = {}
def timed(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(["bash", "-c", cmd + "; true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.setdefault(cmd.split()[0], []).append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall
subprocess.run(["bash", "-c", f"{attend} join bench >/dev/null"], check=True)
send, base = [], []
for _ in range(runs):
    base.append(timed(f"{sys.executable} -c pass"))
    send.append(timed(f"{attend} send 'bench message'"))
who = subprocess.run(["bash", "-c", f"{attend} whoami --json; true"], capture_output=True, text=True).stdout
print(json.dumps({
    "send": statistics.median(send), "base": statistics.median(base),
    "send_cpu": statistics.median(cpu[attend]), "base_cpu": statistics.median(cpu[sys.executable]),
    "who": json.loads(who),
}))
"""

CODEX = r"""
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(15, b"codex", 0, 0, 0)
folder, thread = sys.argv[1], sys.argv[2]
lock = open(os.path.join(folder, "thread-writer-locks", thread + ".lock"), "a")
sys.exit(subprocess.run(sys.argv[3:], env={**os.environ, "CODEX_THREAD_ID": thread}).returncode)
"""

GEMINI = r"""
import os, subprocess, sys  # gemini
sys.path.insert(0, sys.argv[1])
from attend.hosts import gemini
gemini.write_record(os.getpid(), "bench-gemini-session", os.getcwd(), os.environ)
sys.exit(subprocess.run(sys.argv[2:], env={**os.environ, "GEMINI_CLI": "1"}).returncode)
"""


def bench_env(tmp: Path) -> dict[str, str]:
    # Bytecode caching on, as in a normal install (as bench/_common.world_env): without it every send
    # compiles each module it imports, and the figure measures the compiler.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLAUDE", "ATTEND_", "XDG_", "CODEX_", "GEMINI_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        HOME=str(tmp / "home"),
        XDG_CACHE_HOME=str(tmp / "home" / ".cache"),
        XDG_CONFIG_HOME=str(tmp / "home" / ".config"),
        USER="bench",
    )
    (tmp / "home" / ".claude" / "sessions").mkdir(parents=True, exist_ok=True)
    return env


def identity_cost(runs: int) -> None:
    from attend.testing.standin import StandIn

    tmp = tmpdir()
    env = bench_env(tmp)
    project = tmp / "proj"
    project.mkdir()
    inner = [sys.executable, "-c", INNER, ATTEND, str(runs)]
    results: dict[str, dict[str, object]] = {}
    # Codex: a process named codex that holds the thread's writer lock.
    locks = tmp / "home" / ".codex" / "thread-writer-locks"
    locks.mkdir(parents=True)
    thread = "01a23400-0000-7000-8000-00000000bench"
    out = subprocess.run(
        [sys.executable, "-c", CODEX, str(locks.parent), thread, *inner],
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    results["codex"] = json.loads(out.stdout)
    # Gemini: a node process running the CLI, with attend's record for it.
    node = tmp / "bin" / "node"
    node.parent.mkdir()
    node.symlink_to(os.path.realpath(sys.executable))
    out = subprocess.run(
        [str(node), "-c", GEMINI, str(REPO), *inner], env=env, cwd=project, capture_output=True, text=True, check=True
    )
    results["gemini"] = json.loads(out.stdout)
    # Claude Code: a stand-in session with its record; the same inner driver as its child.
    with StandIn(tmp / "home", project, env) as s:
        res = s.run(inner, timeout=600)
        assert res.rc == 0, res.stderr
        results["claude"] = json.loads(res.stdout)
    print(f"1. attend send from each host's shell tool ({runs} runs each, interleaved with python -c pass):")
    for host, r in results.items():
        who = r["who"]
        assert isinstance(who, dict) and who.get("host") == host, who
        send, base = float(r["send"]), float(r["base"])  # type: ignore[arg-type]
        send_cpu, base_cpu = float(r["send_cpu"]), float(r["base_cpu"])  # type: ignore[arg-type]
        print(
            f"   {host}: wall {send * 1000:.1f} ms vs {base * 1000:.1f} ms ({send / base:.2f}x), "
            f"cpu {send_cpu * 1000:.1f} ms vs {base_cpu * 1000:.1f} ms ({send_cpu / base_cpu:.2f}x)"
        )
    print("   goal: <= 2.5x")
    cleanup(tmp)


def delivery(runs: int) -> None:
    """send -> next-turn delivery with each real client (p50 over ``runs``)."""
    import pytest  # noqa: F401  (the e2e harness imports it)

    from tests.e2e.fake_api import Request, done
    from tests.e2e.fake_codex import FakeResponses
    from tests.e2e.fake_gemini import FakeGemini
    from tests.e2e.hosts import HostWorld

    e2e_bin = REPO / "tests" / "e2e" / "node_modules" / ".bin"
    figures: dict[str, list[float]] = {"codex": [], "gemini": [], "claude": []}
    for host in ("codex", "gemini", "claude"):
        for _ in range(runs):
            tmp = tmpdir()
            w = HostWorld(tmp)
            try:
                api: FakeResponses | FakeGemini
                if host == "codex":
                    api = FakeResponses([])
                    w.codex_setup(api)
                elif host == "gemini":
                    api = FakeGemini([])
                    w.gemini_setup(api)
                else:
                    from tests.e2e.fake_api import FakeAPI

                    api = FakeAPI([])  # type: ignore[assignment]
                    (w.home / ".claude").mkdir(exist_ok=True)
                out = w.attend("install", "--host", host, env={"PATH": f"{e2e_bin}:{w.env['PATH']}"})
                assert out.returncode == 0, out.stderr
                marks: dict[str, float] = {}

                def joined(req: Request, api=api, w=w, marks=marks):  # type: ignore[no-untyped-def]
                    sid = json.loads(w.attend("peers", "--json").stdout)["peers"]
                    target = next((p["session_id"] for p in sid if p["enrolled"]), None)
                    if target is None:
                        raise AssertionError("no enrolled session")
                    w.human_send("--to", target, "delivery bench message")
                    marks["end"] = time.perf_counter()
                    return done("turn ends here")

                def arrived(req: Request, marks=marks):  # type: ignore[no-untyped-def]
                    marks["seen"] = time.perf_counter()
                    return done("seen")

                from tests.e2e.fake_api import bash
                from tests.e2e.fake_codex import shell as codex_shell
                from tests.e2e.fake_gemini import shell as gemini_shell

                join = {"codex": codex_shell, "gemini": gemini_shell, "claude": bash}[host](f"{ATTEND} join bench")
                api.script = [join, joined, arrived, done("end")]
                if host == "codex":
                    run = w.codex([], api=api)  # type: ignore[arg-type]
                elif host == "gemini":
                    run = w.gemini([], api=api)  # type: ignore[arg-type]
                else:
                    run = w.claude([], api=api, allowed_tools=["Bash"])  # type: ignore[assignment]
                assert "seen" in marks, run.explain()
                figures[host].append(marks["seen"] - marks["end"])
            finally:
                w.close()
                cleanup(tmp)
    print(f"2. send -> next-turn delivery, from the turn's end to the next model request ({runs} runs each):")
    for host, xs in figures.items():
        print(
            f"   {host}: p50 {statistics.median(xs) * 1000:.0f} ms (min {min(xs) * 1000:.0f}, max {max(xs) * 1000:.0f})"
        )


def wake(runs: int) -> None:
    """send -> a Codex idle wake in the app-server (p50 over ``runs`` wakes of one thread)."""
    from tests.e2e.fake_api import Request, done
    from tests.e2e.fake_codex import FakeResponses, shell
    from tests.e2e.harness import wait_for
    from tests.e2e.hosts import AppServer, HostWorld

    e2e_bin = REPO / "tests" / "e2e" / "node_modules" / ".bin"
    tmp = tmpdir()
    w = HostWorld(tmp)
    arrivals: list[float] = []

    def seen(req: Request):  # type: ignore[no-untyped-def]
        arrivals.append(time.perf_counter())
        return done("woken")

    api = FakeResponses([shell(f"{ATTEND} join bench"), done("idle"), *([seen] * runs)])
    w.codex_setup(api)
    out = w.attend("install", "--host", "codex", env={"PATH": f"{e2e_bin}:{w.env['PATH']}"})
    assert out.returncode == 0, out.stderr
    server = AppServer(w, api)
    lat: list[float] = []
    try:
        thread = server.start_thread()
        server.turn(thread, "join, then wait")
        for i in range(runs):
            server.wait_count("turn/completed", i + 1, 120)
            wait_for((w.spool_root / "sessions" / thread / "waiter").exists, 60, "the waiter")
            time.sleep(0.5)  # the waiter is in its inotify wait
            w.human_send("--to", thread, f"wake {i}")
            sent = time.perf_counter()
            wait_for(lambda i=i: len(arrivals) > i, 120, "the wake")
            lat.append(arrivals[i] - sent)
    finally:
        server.close()
        w.close()
        cleanup(tmp)
    print(f"3. send -> Codex idle wake in the app-server ({runs} wakes):")
    print(f"   p50 {statistics.median(lat):.2f} s (min {min(lat):.2f}, max {max(lat):.2f})")


def gemini_wake(runs: int) -> None:
    """send -> a Gemini idle self-wake in the interactive UI (p50 over ``runs`` wakes of one session)."""
    from tests.e2e.fake_api import Request, call, done
    from tests.e2e.fake_gemini import FakeGemini, shell
    from tests.e2e.harness import wait_for
    from tests.e2e.hosts import GeminiTUI, HostWorld

    e2e_bin = REPO / "tests" / "e2e" / "node_modules" / ".bin"
    tmp = tmpdir()
    w = HostWorld(tmp)
    arrivals: list[float] = []
    arm = call("run_shell_command", {"command": f"{ATTEND} wait --once", "is_background": True})

    def seen(req: Request):  # type: ignore[no-untyped-def]
        arrivals.append(time.perf_counter())
        return arm  # as the waiter's own last line asks: start it again

    api = FakeGemini([shell(f"{ATTEND} join bench"), arm, done("idle")])
    for _ in range(runs):
        api.script += [seen, done("idle again")]
    path = w.gemini_setup(api)
    doc = json.loads(path.read_text())
    doc.update(experimental={"modelSteering": True}, tools={"shell": {"backgroundCompletionBehavior": "inject"}})
    path.write_text(json.dumps(doc))
    out = w.attend("install", "--host", "gemini", env={"PATH": f"{e2e_bin}:{w.env['PATH']}"})
    assert out.returncode == 0, out.stderr
    tui = GeminiTUI(w, api)
    lat: list[float] = []
    try:
        tui.start()
        tui.type("join, then wait")
        records = w.home / ".gemini" / "attend" / "sessions"
        wait_for(lambda: list(records.glob("*.json")), 60, "the session record")
        sid = json.loads(next(records.glob("*.json")).read_text())["sessionId"]
        waiter_file = w.spool_root / "sessions" / sid / "waiter"
        for i in range(runs):
            wait_for(lambda i=i: api.consumed >= 3 + 2 * i, 120, "the turn to end")
            wait_for(waiter_file.exists, 60, "the waiter")
            time.sleep(1.0)  # the turn end's drain is done, the waiter in its inotify wait
            w.human_send("--to", sid, f"wake {i}")
            sent = time.perf_counter()
            wait_for(lambda i=i: len(arrivals) > i, 120, "the wake")
            lat.append(arrivals[i] - sent)
    finally:
        tui.close()
        w.close()
        cleanup(tmp)
    print(f"4. send -> Gemini idle self-wake in the interactive UI ({runs} wakes):")
    print(f"   p50 {statistics.median(lat) * 1000:.0f} ms (min {min(lat) * 1000:.0f}, max {max(lat) * 1000:.0f})")


def _codex_home_procs(codex_home: Path) -> list[int]:
    """The processes running the binary Codex copied into ``codex_home`` (its daemon, the daemon's
    pid-update-loop): this run's own, found by that private path, never by a name."""
    prefix = str(codex_home / "packages") + "/"
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0", 1)[0].decode(errors="replace")
        except OSError:
            continue
        if argv0.startswith(prefix):
            pids.append(int(entry))
    return pids


def tui_wake(runs: int) -> None:
    """send -> a Codex idle wake, the interactive TUI in tmux with its threads in the shared daemon."""
    import signal
    import uuid

    from tests.e2e.fake_api import Request, done
    from tests.e2e.fake_codex import FakeResponses, shell, thread_id_of, user_texts
    from tests.e2e.harness import wait_for
    from tests.e2e.hosts import HostWorld, codex_bin
    from tests.e2e.tui import launcher, tmux_bin

    e2e_bin = REPO / "tests" / "e2e" / "node_modules" / ".bin"
    tmp = tmpdir()
    w = HostWorld(tmp)
    arrivals: dict[int, float] = {}  # wake i -> when the first request carrying "wake i" came

    def seen(req: Request):  # type: ignore[no-untyped-def]
        at = time.perf_counter()
        for i in range(runs):
            if any(f"wake {i}:" in t for t in user_texts([req])):
                arrivals.setdefault(i, at)
        return done("woken")

    api = FakeResponses([shell(f"{ATTEND} join bench"), done("idle"), *([seen] * (runs * 3))])
    w.codex_setup(api)
    out = w.attend("install", "--host", "codex", env={"PATH": f"{e2e_bin}:{w.env['PATH']}"})
    assert out.returncode == 0, out.stderr
    server = f"attend-bench-{uuid.uuid4().hex[:10]}"
    tmux = tmux_bin()

    def tm(*args: str) -> str:
        return subprocess.run([tmux, "-L", server, *args], capture_output=True, text=True, timeout=30).stdout

    def screen() -> str:
        return tm("capture-pane", "-p", "-t", "t")

    script = launcher(tmp / "codex-tui.sh", w.codex_env(), w.project("proj"), [codex_bin()])
    lat: list[float] = []
    hosts: set[str] = set()
    api.__enter__()
    try:
        tm("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", str(script))
        # The first run offers a model upgrade ("Meet …", keep the configured model), drawn a moment
        # after the prompt: dismiss it wherever it shows, and type the first prompt again if it ate it.
        for _ in range(5):
            try:
                wait_for(lambda: "Use existing model" in screen() or "Ask Codex" in screen(), 120, "the TUI")
            except TimeoutError as e:
                raise TimeoutError(f"{e}; the screen:\n{screen()}") from None
            if "Use existing model" in screen():
                tm("send-keys", "-t", "t", "Down")
                time.sleep(0.5)
                tm("send-keys", "-t", "t", "Enter")
                continue
            time.sleep(2)  # the offer comes a moment after the prompt: type into a settled screen
            if "Use existing model" in screen():
                continue
            tm("send-keys", "-t", "t", "-l", "join the bench channel")
            time.sleep(0.3)  # text and Enter apart, or Enter is a newline in the paste
            tm("send-keys", "-t", "t", "Enter")
            with contextlib.suppress(TimeoutError):
                wait_for(lambda: api.consumed >= 2 or "Use existing model" in screen(), 60, "the joining turn")
            if api.consumed >= 2:
                break
        if api.consumed < 2:
            raise TimeoutError(f"the joining turn never ran; the screen:\n{screen()}")
        thread = thread_id_of(api.turns[0])
        assert thread, "no thread id in the model request"
        waiter = w.spool_root / "sessions" / thread / "waiter"
        before = ""
        for i in range(runs):

            def armed(before: str = before) -> bool:
                try:
                    text = waiter.read_text()
                except OSError:
                    return False
                return bool(text) and text != before and os.path.exists(f"/proc/{text.split()[0]}")

            wait_for(armed, 120, "the waiter")
            before = waiter.read_text()
            time.sleep(0.5)  # the waiter is in its inotify wait
            w.human_send("--to", thread, f"wake {i}: from the human")
            sent = time.perf_counter()
            wait_for(lambda i=i: i in arrivals, 120, "the wake")
            lat.append(arrivals[i] - sent)
        # Where the thread ran: the codex process that holds its writer lock.
        from attend.hosts import codex as codex_host

        for pid in _codex_home_procs(w.codex_home):
            if thread in codex_host.held(pid):
                hosts.add(" ".join(Path(f"/proc/{pid}/cmdline").read_text().split("\0")[1:4]))
    finally:
        subprocess.run(
            [codex_bin(), "app-server", "daemon", "stop"], env=w.codex_env(), capture_output=True, timeout=60
        )
        tm("kill-server")
        for pid in _codex_home_procs(w.codex_home):  # the pid-update-loop outlives the stop
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        api.close()
        w.close()
        cleanup(tmp)
    print(f"5. send -> Codex idle wake, the interactive TUI with its thread in the shared daemon ({runs} wakes):")
    print(f"   thread hosted by: {sorted(hosts) or '?'}")
    print(f"   p50 {statistics.median(lat):.2f} s (min {min(lat):.2f}, max {max(lat):.2f})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", choices=("identity", "delivery", "wake", "gemini-wake", "codex-tui-wake"))
    args = ap.parse_args()
    if args.only in (None, "identity"):
        identity_cost(max(args.runs, 20))
    if args.only in (None, "delivery"):
        delivery(args.runs)
    if args.only in (None, "wake"):
        wake(args.runs)
    if args.only in (None, "gemini-wake"):
        gemini_wake(args.runs)
    if args.only in (None, "codex-tui-wake"):
        tui_wake(args.runs)


if __name__ == "__main__":
    main()
