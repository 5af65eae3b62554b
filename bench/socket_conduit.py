"""Socket-conduit benchmarks with the real Claude Code client and the scripted model: `attend mcp`
posting a session's mail to the client's inbox socket (docs/architecture/conduits.md).

- idle: send -> the idle interactive session's new request, over N sends (goal p50 <= 300 ms);
- busy: send during a tool call -> the next request, measured past the tool's end (goal p50 <= 50 ms);
- turnend: a send that lands as a turn ends (made while the model's last answer is held) -> the next
  request carrying it: the conduit's post waits in the client's queue for the turn-end hook;
- versus: attend's wake against the client's own `SendMessage`, alternating, against the same idle
  interactive session: from the start of an `attend send` process, and from the sending model's
  request reaching its API, to the idle session's new request (goal: attend's median <= the client's);
  with each, the idle client's own CPU and its threads' run-queue wait over the wake (/proc schedstat).
  BENCH_CONDUIT=waiter turns the socket off, so the waiter wakes the idle TUI; BENCH_DIRECT=1 adds a
  round in which the bench posts attend's text to the socket itself, with no attend process at work;
- cost: an idle, enrolled TUI session for S seconds: model turns (goal 0), and its `attend mcp`'s
  context switches (every thread, from /proc) and CPU time, and its RSS with the conduit on and off
  (goal <= 2 MB extra, 0 wakes without an event).

- link: in process, the conduit's own part: a message linked into the session's `new/` -> its post on a
  stand-in socket (the tests' `Inbox`), N messages one at a time past the post gap.

Run: .venv/bin/python bench/socket_conduit.py idle [sends=10]
     .venv/bin/python bench/socket_conduit.py link [messages=20]
     .venv/bin/python bench/socket_conduit.py versus [rounds=10]
     .venv/bin/python bench/socket_conduit.py busy [sends=8]
     .venv/bin/python bench/socket_conduit.py turnend [sends=10]
     .venv/bin/python bench/socket_conduit.py burst [n=25]   # n at once, n more over 5 s, mid-tool-call
     .venv/bin/python bench/socket_conduit.py cost [seconds=120] [off_seconds=min(seconds, 180)]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend import layout
from attend.conduits import inbox_socket
from bench._common import pct
from bench.sensor import cpu_seconds, rss_mb
from tests.e2e.fake_api import FakeAPI, Reply, Request, bash, done
from tests.e2e.harness import E2EWorld, expect_ok, latest_user_texts, session_id_of, wait_for
from tests.e2e.tui import TUI


def world() -> E2EWorld:
    e2e = E2EWorld(Path(tempfile.mkdtemp(prefix="attend-bench-socket-")))
    out = e2e.attend("install", "--target", str(e2e.claude_dir))
    assert out.returncode == 0, out.stderr
    path = e2e.claude_dir / "settings.json"
    settings = json.loads(path.read_text())
    settings["permissions"]["allow"].append("Bash")
    path.write_text(json.dumps(settings))
    if os.environ.get("BENCH_CONDUIT") == "waiter":  # the socket off: the waiter wakes the idle TUI
        config = Path(layout.config_root(e2e.env)) / "config.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("conduits:\n  socket: off\n")
    return e2e


def sched(pid: Any) -> tuple[float, float]:
    """(CPU run time, time waiting on a run queue) of all threads of ``pid``, in seconds."""
    run = wait = 0
    if pid:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                a, b, _ = (task / "schedstat").read_text().split()
            except (OSError, ValueError):
                continue
            run, wait = run + int(a), wait + int(b)
    return run / 1e9, wait / 1e9


def serving(e2e: E2EWorld, sid: Any) -> int | None:
    return inbox_socket.served_by(e2e.spool, str(sid)) if sid else None


def report(name: str, xs: list[float]) -> None:
    ms = [x * 1000 for x in xs]
    print(
        f"{name}: n={len(ms)} p50 {statistics.median(ms):.0f} ms, p99 {pct(ms, 99):.0f} ms, "
        f"min {min(ms):.0f} ms, max {max(ms):.0f} ms"
    )


def idle(sends: int) -> None:
    e2e = world()
    state: dict[str, Any] = {"arrived": {}}

    def joined(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        return done("Idle.")

    def woken(req: Request) -> Reply:
        now = time.perf_counter()
        for t in latest_user_texts(req):
            for tag in state.get("sent", {}):
                if tag in t:
                    state["arrived"].setdefault(tag, now)
        return done("Read it.")

    api = FakeAPI([bash("attend join bench"), joined, *[woken] * (sends + 5)])
    tui = TUI(e2e, api).start()
    xs: list[float] = []
    parts: dict[str, list[float]] = {"send": [], "claim": [], "client": []}
    try:
        tui.type("join the bench channel")
        if os.environ.get("BENCH_CONDUIT") == "waiter":
            from attend.conduits import waiter as waiting

            wait_for(lambda: state.get("sid") and waiting.waiter_live(e2e.spool, str(state["sid"])), 90, "the waiter")
        else:
            wait_for(lambda: serving(e2e, state.get("sid")), 90, "the socket conduit")
        state["sent"] = {}
        for i in range(sends):
            wait_for(lambda: (tui.record() or {}).get("status") == "idle", 60, "the session to be idle")
            time.sleep(inbox_socket.POST_GAP + 0.5)  # past the post gap: each send is a fresh burst
            tag = f"idle-{i}-{uuid.uuid4().hex[:6]}"
            claimed = e2e.spool_root / "sessions" / str(state["sid"]) / "claimed"
            state["sent"][tag] = time.perf_counter()
            e2e.attend("send", tag)
            returned = time.perf_counter()
            wait_for(lambda claimed=claimed: any(claimed.iterdir()), 60, "the claim", interval=0.002)
            claim = time.perf_counter()
            wait_for(lambda tag=tag: tag in state["arrived"], 60, "the woken request")
            xs.append(state["arrived"][tag] - state["sent"][tag])
            parts["send"].append(returned - state["sent"][tag])
            parts["claim"].append(claim - returned)
            parts["client"].append(state["arrived"][tag] - claim)
    finally:
        tui.close()
        e2e.close()
    report("send start -> the idle session's new request", xs)
    back = [a + b for a, b in zip(parts["claim"], parts["client"], strict=True)]
    report("send returned -> the idle session's new request", back)
    report("  send start -> send returned", parts["send"])
    report("  send returned -> claimed by the conduit", parts["claim"])
    report("  claimed -> the client's request (render, post, the client)", parts["client"])


def versus(rounds: int) -> None:
    """One idle TUI session (attend wired, its `attend mcp` serving the socket) and one sending session
    (`claude -p`, stream input) whose model calls the client's own `SendMessage` to the idle
    session's socket (`uds:<path>`), or attend's own MCP send tool. Each round: an `attend send`
    process, a `SendMessage`, then an MCP send, each once the session is idle again and past the
    client's post gap."""
    from tests.e2e.fake_api import call, tool_search
    from tests.e2e.harness import latest_tool_result

    e2e = world()
    state: dict[str, Any] = {"arrived": {}, "sent": {}, "phase": "search", "results": [], "wall": {}, "returned": {}}

    def joined(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        return done("Idle.")

    def woken(req: Request) -> Reply:
        now = time.perf_counter()
        for t in latest_user_texts(req):
            for tag in list(state["sent"]):
                if tag in t:
                    state["arrived"].setdefault(tag, now)
                    state.setdefault("sched_end", {}).setdefault(tag, sched(state.get("tui_pid")))
        return done("Read it.")

    def sender(req: Request) -> Reply:
        phase = state["phase"]
        if phase == "search":  # the first turn: load the deferred tools, as a model does, and join
            state["phase"] = "join"
            return tool_search("SendMessage", "mcp__attend__send")
        if phase == "join":
            state["phase"] = "warm"
            return bash("attend join bench")
        if phase == "send":
            tag, name, args = state["call"]
            state["sent"][tag] = time.perf_counter()  # the sending model's request reached its API
            state.setdefault("sched_start", {})[tag] = sched(state.get("tui_pid"))
            state["wall"][tag] = time.time()
            state["phase"] = "sent"
            return call(name, args)
        result = latest_tool_result(req)
        state["results"].append(result.text if result is not None else None)
        state["phase"] = "idle"
        return done("Sent.")

    api = FakeAPI([bash("attend join bench"), joined, *[woken] * (6 * rounds + 10)])
    tui = TUI(e2e, api).start()
    attend_xs: list[float] = []
    own_xs: list[float] = []
    mcp_xs: list[float] = []
    direct_xs: list[float] = []
    try:
        tui.type("join the bench channel")
        if os.environ.get("BENCH_CONDUIT") == "waiter":
            from attend.conduits import waiter as waiting

            wait_for(lambda: state.get("sid") and waiting.waiter_live(e2e.spool, str(state["sid"])), 90, "the waiter")
        else:
            wait_for(lambda: serving(e2e, state.get("sid")), 90, "the socket conduit")
        record = next(r for r in tui.watch.records.values() if r.get("sessionId") == state["sid"])
        state["sock"] = record["messagingSocketPath"]
        state["tui_pid"] = int(record["pid"])
        b = e2e.start(
            [sender] * (8 * rounds + 12),
            "load SendMessage",
            stream_input=True,
            allowed_tools=["SendMessage", "ToolSearch", "Bash", "mcp__attend__send"],
            project="sender",
            timeout=600,
        )
        wait_for(lambda: state["phase"] == "idle" or state["results"], 90, "the sender's first turn")
        state["phase"] = "idle"

        def status() -> str | None:
            tui.watch.snap()
            return (tui.watch.records.get(int(record["pid"])) or {}).get("status")

        def ready() -> None:
            wait_for(lambda: status() == "idle", 60, "the session to be idle")
            time.sleep(inbox_socket.POST_GAP + 0.5)  # past the client's post gap: a fresh post

        for i in range(rounds):
            ready()
            tag = f"attend-{i}-{uuid.uuid4().hex[:6]}"
            state["sent"][tag] = time.perf_counter()
            state.setdefault("sched_start", {})[tag] = sched(state.get("tui_pid"))
            state["wall"][tag] = time.time()
            said = e2e.attend("send", "--to", str(state["sid"]), tag)  # to the idle session alone, as the others
            state["returned"][tag] = time.time()
            try:
                wait_for(lambda tag=tag: tag in state["arrived"], 60, "attend's wake")
            except TimeoutError:
                log = e2e.spool_root / "log" / layout.LOG_FILE
                print(f"round {i}: attend's wake never came; the log:\n{log.read_text() if log.exists() else ''}")
                session = e2e.spool_root / "sessions" / str(state["sid"])
                print("the send said:", said.returncode, said.stdout, said.stderr)
                for sub in ("new", "claimed", "cur", "held", "declined"):
                    print(sub, sorted(p.name for p in (session / sub).iterdir()) if (session / sub).exists() else "-")
                for f in ("socket", "posted", "reply-hint"):
                    print(f, (session / f).read_text() if (session / f).exists() else "-")
                for f in e2e.claude_dir.glob(f"projects/*/{state['sid']}.jsonl"):
                    print("transcript tail:", f.read_text()[-3000:])
                raise
            attend_xs.append(state["arrived"][tag] - state["sent"][tag])
            ready()
            tag = f"own-{i}-{uuid.uuid4().hex[:6]}"
            state["call"] = (tag, "SendMessage", {"to": f"uds:{state['sock']}", "message": f"{tag} from the client"})
            state["phase"] = "send"
            b.say(f"send round {i}")
            try:
                wait_for(lambda tag=tag: tag in state["arrived"], 30, "SendMessage's wake")
                own_xs.append(state["arrived"][tag] - state["sent"][tag])
            except TimeoutError:
                print(f"SendMessage round {i} never arrived; the tool said: {state['results'][-1:]}")
            ready()
            tag = f"mcp-{i}-{uuid.uuid4().hex[:6]}"
            state["call"] = (tag, "mcp__attend__send", {"message": tag, "to": str(state["sid"])})
            state["phase"] = "send"
            b.say(f"attend round {i}")
            try:
                wait_for(lambda tag=tag: tag in state["arrived"], 30, "the MCP send's wake")
                mcp_xs.append(state["arrived"][tag] - state["sent"][tag])
            except TimeoutError:
                print(f"MCP send round {i} never arrived; the tool said: {state['results'][-1:]}")
            if os.environ.get("BENCH_DIRECT"):  # the bench itself posts attend's text: no attend process at work
                ready()
                tag = f"direct-{i}-{uuid.uuid4().hex[:6]}"
                pid = serving(e2e, state["sid"])
                envs = dict(
                    kv.split("=", 1) for kv in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in kv
                )
                content = (
                    f"{inbox_socket.HEADER} (post {uuid.uuid4().hex})\n[attend] 1 message(s) from peers, not your "
                    f"user:\n[{time.strftime('%H:%M')} UTC] bench (agent, claude; direct, id 1796575564.M7):\n  {tag}"
                )
                state["sent"][tag] = time.perf_counter()
                state["wall"][tag] = time.time()
                from attend.conduits import inbox_client

                inbox_client.post(envs["CLAUDE_CODE_MESSAGING_SOCKET"], envs["CLAUDE_CODE_MESSAGING_TOKEN"], content)
                wait_for(lambda tag=tag: tag in state["arrived"], 30, "the direct post's wake")
                direct_xs.append(state["arrived"][tag] - state["sent"][tag])
            print(f"round {i}: attend send {attend_xs[-1] * 1e3:.0f} ms", flush=True)
        b.proc.kill()
        took = enqueued(e2e, str(state["sid"]), list(state["sent"]))
        if keep := os.environ.get("BENCH_KEEP_TRANSCRIPT"):  # for a look at the client's own steps
            for f in e2e.claude_dir.glob(f"projects/*/{state['sid']}.jsonl"):
                Path(keep).write_text(f.read_text())
    finally:
        tui.close()
        e2e.close()
    # Where the time goes: the client stamps each post it takes off the socket (ms resolution).
    arrived_wall = {t: state["wall"][t] + state["arrived"][t] - state["sent"][t] for t in state["arrived"]}
    mine = [t for t in state["returned"] if t in took and t in arrived_wall]
    own = [t for t in state["wall"] if t.startswith("own-") and t in took and t in arrived_wall]
    tool = [t for t in state["wall"] if t.startswith("mcp-") and t in took and t in arrived_wall]
    direct = [t for t in state["wall"] if t.startswith("direct-") and t in took and t in arrived_wall]
    if direct:
        report("  the bench's own post: posted -> the client took it in", [took[t] - state["wall"][t] for t in direct])
        report("  the bench's own post: taken in -> its request", [arrived_wall[t] - took[t] for t in direct])
        report("the bench's own post of attend's text -> the idle session's new request", direct_xs)
    if mine:
        report("  attend: send start -> send returned", [state["returned"][t] - state["wall"][t] for t in mine])
        report("  attend: send returned -> the client took the post in", [took[t] - state["returned"][t] for t in mine])
        report("  attend: the client took the post in -> its new request", [arrived_wall[t] - took[t] for t in mine])
    if own:
        report(
            "  SendMessage: the sender's request -> the client took it in", [took[t] - state["wall"][t] for t in own]
        )
        report("  SendMessage: the client took it in -> its new request", [arrived_wall[t] - took[t] for t in own])
    if tool:
        report(
            "  attend's MCP send: the sender's request -> the client took the post in",
            [took[t] - state["wall"][t] for t in tool],
        )
        report(
            "  attend's MCP send: the client took it in -> its new request", [arrived_wall[t] - took[t] for t in tool]
        )
    report("attend: `attend send` process start -> the idle session's new request", attend_xs)
    if own_xs:
        report("the client's SendMessage: the sender's request at its API -> the idle session's new request", own_xs)
    if mcp_xs:
        report("attend's MCP send tool: the sender's request at its API -> the idle session's new request", mcp_xs)
    for prefix in ("attend-", "own-", "mcp-", "direct-"):
        tags = [t for t in state.get("sched_end", {}) if t.startswith(prefix) and t in state.get("sched_start", {})]
        if tags:
            runs = [state["sched_end"][t][0] - state["sched_start"][t][0] for t in tags]
            waits = [state["sched_end"][t][1] - state["sched_start"][t][1] for t in tags]
            report(f"  {prefix} the TUI's CPU from the send to its request", runs)
            report(f"  {prefix} the TUI's threads waiting for a CPU meanwhile", waits)
    print("attend, ms:", ", ".join(f"{x * 1000:.0f}" for x in sorted(attend_xs)))
    print("attend's MCP send, ms:", ", ".join(f"{x * 1000:.0f}" for x in sorted(mcp_xs)))
    print("SendMessage, ms:", ", ".join(f"{x * 1000:.0f}" for x in sorted(own_xs)))
    print(f"SendMessage results: {state['results'][:2]}")


def link(n: int) -> None:
    from tests.support import World, maildir, post, wait_until
    from tests.test_inbox_socket import Setup

    world = World(Path(tempfile.mkdtemp(prefix="attend-bench-socket-link-")))
    s = Setup(world, idle=True)
    conduit = s.start()
    xs: list[float] = []
    try:
        for i in range(n):
            conduit.last_post = 0.0  # past the post gap: each message is the first after a quiet spell
            before = len(s.inbox.posts)
            post(world.spool, "open", f"m{i}")
            linked = time.perf_counter()
            wait_for(lambda before=before: len(s.inbox.posts) > before, 30, "the post", interval=0.0005)
            xs.append(time.perf_counter() - linked)
            wait_until(lambda i=i: len(maildir(world, s.sid, "cur")) == i + 1, "marked seen")
            time.sleep(0.1)
    finally:
        s.close()
        world.close()
    report("linked into new/ -> the post on the socket (the first pays the claim's first use)", xs)
    report("  the same, after the first", xs[1:])


def enqueued(e2e: E2EWorld, sid: str, tags: list[str]) -> dict[str, float]:
    """When the client took each tagged post in (epoch seconds): the transcript's ``queue-operation``
    ``enqueue`` entry for it, stamped by the client as it reads the post off the socket."""
    from datetime import datetime

    out: dict[str, float] = {}
    for f in e2e.claude_dir.glob(f"projects/*/{sid}.jsonl"):
        for line in f.read_text().splitlines():
            if '"queue-operation"' not in line or '"enqueue"' not in line:
                continue
            entry = json.loads(line)
            for tag in tags:
                if tag in line and "timestamp" in entry:
                    out.setdefault(tag, datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00")).timestamp())
    return out


def turnend(sends: int) -> None:
    """A message that lands as a turn ends: the scripted model's last answer of each turn is held
    while an `attend send` runs (the send made in its handler, as a person's send lands while the
    model writes), then the turn ends. The conduit posts into the client's queue while the turn-end
    hook runs; the client shows the post after the hook returns. From the send's start to the
    session's next request carrying it, and which conduit showed it."""
    e2e = world()
    state: dict[str, Any] = {"arrived": {}, "sent": {}, "via": {}, "i": 0}

    def send_then_answer(req: Request) -> Reply:
        now = time.perf_counter()
        for t in latest_user_texts(req):
            for tag in state["sent"]:
                if tag in t and tag not in state["arrived"]:
                    state["arrived"][tag] = now
                    state["via"][tag] = "post" if "(post " in t else "hook"
        if state["i"] < sends:
            time.sleep(inbox_socket.POST_GAP + 0.5)  # past the last post's gap: each send a fresh burst
            tag = f"turnend-{state['i']}-{uuid.uuid4().hex[:6]}"
            state["i"] += 1
            state["sent"][tag] = time.perf_counter()
            e2e.attend("send", tag)
        return done("Read it.")

    def joined(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        wait_for(lambda: serving(e2e, state["sid"]), 60, "the socket conduit")
        return send_then_answer(req)

    api = FakeAPI([bash("attend join bench"), joined, *[send_then_answer] * (sends + 5)])
    tui = TUI(e2e, api).start()
    try:
        tui.type("join the bench channel")
        wait_for(lambda: len(state["arrived"]) >= sends, 60 + 10 * sends, "every send to reach the model")
    finally:
        tui.close()
        e2e.close()
    xs = [state["arrived"][t] - state["sent"][t] for t in state["sent"] if t in state["arrived"]]
    vias = list(state["via"].values())
    shown = f"shown by the post {vias.count('post')}, by the hook {vias.count('hook')}"
    print(f"{len(xs)}/{sends} reached the model; {shown}")
    report("send start (as the turn ends) -> the next request carrying it", xs)


def busy(sends: int) -> None:
    e2e = world()
    d = e2e.tmp / "marks"
    d.mkdir()
    state: dict[str, Any] = {"i": 0, "tags": {}, "sent": {}, "returned": {}, "linked": {}}

    def tool(i: int) -> Reply:
        # Wait for the send, sleep 3 s, stamp the tool's end (epoch seconds, as time.time()).
        return bash(f"until [ -e {d}/sent{i} ]; do sleep 0.05; done; sleep 3; date +%s.%N > {d}/end{i}", "sleep")

    def joined(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        wait_for(lambda: serving(e2e, state["sid"]), 60, "the socket conduit")
        return tool(0)

    def next_request(req: Request) -> Reply:
        now = time.time()
        i = state["i"]
        if i % 2 == 1:  # no send this time: the client's own turnaround after a tool call
            state.setdefault("plain", {})[i] = now
        elif any(state["tags"].get(i, "-") in t for t in latest_user_texts(req)):
            state.setdefault("arrived", {})[i] = now
        state["i"] = i + 1
        return tool(i + 1) if i + 1 < sends else done("Done.")

    def operator() -> None:
        for i in range(sends):
            wait_for(lambda i=i: api.consumed >= 2 + i, 120, "the tool call")
            time.sleep(inbox_socket.POST_GAP)  # the previous post's gap
            if i % 2 == 0:
                state["tags"][i] = tag = f"busy-{i}-{uuid.uuid4().hex[:6]}"
                state["sent"][i] = time.time()
                sent = e2e.attend("send", "--json", tag)
                state["returned"][i] = time.time()
                state["linked"][i] = layout.name_time(json.loads(sent.stdout)["id"])  # named, then linked
            (d / f"sent{i}").touch()

    api = FakeAPI([bash("attend join bench"), joined, *[next_request] * sends])
    threading.Thread(target=operator, daemon=True).start()
    run = e2e.claude([], api=api, mcp_config=e2e.mcp_config(), timeout=60 + 12 * sends)
    end = {i: float((d / f"end{i}").read_text()) for i in range(sends) if (d / f"end{i}").exists()}
    xs = [state["arrived"][i] - end[i] for i in sorted(state.get("arrived", {}))]
    plain = [state["plain"][i] - end[i] for i in sorted(state.get("plain", {}))]
    took = enqueued(e2e, str(state.get("sid")), list(state["tags"].values()))
    posted = [(i, took[t]) for i, t in state["tags"].items() if t in took]
    e2e.close()
    print(f"rc {run.rc}; {len(xs)}/{(sends + 1) // 2} sends reached the request after their tool call")
    report("tool end -> the next request carrying the send", xs)
    report("tool end -> the next request, nothing sent (the client's own turnaround)", plain)
    # attend's part is all before the tool's end: the send, the conduit's wake, claim and post.
    report(
        "  the message named (and linked) -> the client took the post in (attend's share: wake, gather, "
        "claim, render, post)",
        [at - state["linked"][i] for i, at in posted],
    )
    report(
        "  send start -> send returned (the send process)", [state["returned"][i] - state["sent"][i] for i, _ in posted]
    )
    report("  the client took the post in -> the tool's end (it waited queued)", [end[i] - at for i, at in posted])


def burst(n: int) -> None:
    """n messages land at once, then n more spread over 5 s, during an 8 s tool call: how many reach
    the model (in the next request, or the turn-end drain's block), and in how many posts."""
    from tests.support import post

    e2e = world()
    flag = e2e.tmp / "go"
    tags = [f"b{i}-{uuid.uuid4().hex[:6]}" for i in range(2 * n)]

    def joined(req: Request) -> Reply:
        expect_ok(req, "attend join")
        sid = session_id_of(req)
        wait_for(lambda: serving(e2e, sid), 60, "the socket conduit")
        return bash(f"until [ -e {flag} ]; do sleep 0.05; done; sleep 8", "sleep")

    def operator() -> None:
        wait_for(lambda: api.consumed >= 2, 60, "the tool call")
        flag.touch()
        for t in tags[:n]:
            post(e2e.spool, "open", t)
        for t in tags[n:]:
            post(e2e.spool, "open", t)
            time.sleep(5 / n)

    api = FakeAPI([bash("attend join bench"), joined, done("Read."), done("Read."), done("Read.")])
    threading.Thread(target=operator, daemon=True).start()
    run = e2e.claude([], api=api, mcp_config=e2e.mcp_config(), timeout=120)
    import re

    texts = run.user_texts()
    posts = sum(inbox_socket.HEADER in t for t in texts)
    counted = sum(int(m) for t in texts for m in re.findall(r"\[attend\] (\d+) message\(s\)", t))
    in_full = sum(any(t in x for x in texts) for t in tags)
    folded = len(re.findall(r"\[folded\]", "\n".join(texts)))
    sid = str(run.session_id)
    left = [p.name for sub in ("new", "claimed") for p in (e2e.spool_root / "sessions" / sid / sub).glob("*")]
    e2e.close()
    print(
        f"rc {run.rc}: {2 * n} messages; the model was shown {counted} ({in_full} in full, the rest in "
        f"{folded} folded line(s) naming them by id) in {posts} post(s); left unshown: {len(left)}"
    )


def switches(pid: int) -> dict[int, int]:
    """Context switches (voluntary + involuntary) of every thread of ``pid``."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        n = 0
        try:
            for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines():
                if line.endswith("ctxt_switches:") or "ctxt_switches" in line:
                    n += int(line.split()[1])
        except OSError:
            continue
        out[int(tid)] = n
    return out


def mcp_pid(claude_pid: int) -> int:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        if ppid == claude_pid and b"mcp" in cmd:
            return int(entry)
    raise LookupError("no attend mcp under the client")


def one_idle(seconds: float, socket_on: bool) -> dict[str, Any]:
    e2e = world()
    if not socket_on:
        config = Path(layout.config_root(e2e.env)) / "config.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("conduits:\n  socket: off\n")
    state: dict[str, Any] = {}

    def joined(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        return done("Idle.")

    api = FakeAPI([bash("attend join bench"), joined])
    tui = TUI(e2e, api).start()
    try:
        tui.type("join the bench channel")
        wait_for(lambda: "sid" in state, 90, "the join")
        wait_for(lambda: (tui.record() or {}).get("status") == "idle", 60, "the session to be idle")
        if socket_on:
            wait_for(lambda: serving(e2e, state["sid"]), 60, "the socket conduit")
        time.sleep(5)  # the turn end's hooks are done
        pid = mcp_pid(int(tui.pid or 0))
        turns0, cpu0, sw0 = api.consumed, cpu_seconds(pid), switches(pid)
        rss = [rss_mb(pid)]
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            time.sleep(5)
            rss.append(rss_mb(pid))
        sw1 = switches(pid)
        woke = {tid: sw1.get(tid, 0) - n for tid, n in sw0.items()}
        return {
            "turns": api.consumed - turns0,
            "cpu": cpu_seconds(pid) - cpu0,
            "rss": max(rss),
            "wakes": sum(woke.values()),
            "threads": len(sw0),
            "per_thread": sorted(woke.values(), reverse=True),
        }
    finally:
        tui.close()
        e2e.close()


def cost(seconds: float, off_seconds: float) -> None:
    """The conduit on for ``seconds`` (the turns and wakes), then off for ``off_seconds`` (the RSS to
    compare with: a shorter stretch is enough for that)."""
    on = one_idle(seconds, True)
    off = one_idle(off_seconds, False)
    for name, r, span in (("socket on", on, seconds), ("socket off", off, off_seconds)):
        print(
            f"{name}: idle {span:g} s: model turns {r['turns']}; attend mcp CPU {r['cpu']:.3f} s, "
            f"RSS {r['rss']:.1f} MB, context switches {r['wakes']} over {r['threads']} threads {r['per_thread']}"
        )
    print(
        f"extra RSS with the conduit: {on['rss'] - off['rss']:+.1f} MB; turns per idle hour: "
        f"{on['turns'] * 3600 / seconds:.1f}"
    )


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "idle"
    args = sys.argv[2:]
    if what == "idle":
        idle(int(args[0]) if args else 10)
    elif what == "link":
        link(int(args[0]) if args else 20)
    elif what == "versus":
        versus(int(args[0]) if args else 10)
    elif what == "busy":
        busy(int(args[0]) if args else 8)
    elif what == "turnend":
        turnend(int(args[0]) if args else 10)
    elif what == "burst":
        burst(int(args[0]) if args else 25)
    else:
        span = float(args[0]) if args else 120
        cost(span, float(args[1]) if len(args) > 1 else min(span, 180))
