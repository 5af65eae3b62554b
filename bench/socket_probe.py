"""Probe Claude Code's session inbox socket with the real client and the scripted model (not a
benchmark: what docs/architecture/conduits.md records about the socket comes from here).

A stand-in stdio MCP server (a child of the session, as ``attend mcp`` is) answers the handshake and
posts what the probe asks for to ``CLAUDE_CODE_MESSAGING_SOCKET``: a connection, the auth line, one
message line, then it reads whatever comes back for a second.

    .venv/bin/python bench/socket_probe.py busy          # a post during a 3 s tool call
    .venv/bin/python bench/socket_probe.py burst [n]     # n posts 100 ms apart during a tool call
    .venv/bin/python bench/socket_probe.py idle          # a post to the idle interactive TUI
    .venv/bin/python bench/socket_probe.py idleburst [n] # n posts 100 ms apart to the idle TUI
    .venv/bin/python bench/socket_probe.py prompt        # a post while a permission prompt is open
    .venv/bin/python bench/socket_probe.py bypass        # a post to an idle TUI in bypassPermissions
    .venv/bin/python bench/socket_probe.py refuse        # crossSessionInbound: refuse (no socket?)
    .venv/bin/python bench/socket_probe.py hold          # crossSessionInbound: hold (held for approval?)
"""

from __future__ import annotations

import json
import socket
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import contextlib

from tests.e2e.fake_api import FakeAPI, Request, bash, done
from tests.e2e.harness import E2EWorld, latest_user_texts, wait_for
from tests.e2e.tui import TUI

STANDIN = r"""
import json, os, socket, sys, threading, time
d = sys.argv[1]
with open(os.path.join(d, "env.json"), "w") as f:
    json.dump({k: v for k, v in os.environ.items() if k.startswith("CLAUDE")}, f)

def post(content, extra, listen):
    t0 = time.time()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.environ["CLAUDE_CODE_MESSAGING_SOCKET"])
    shut = extra.pop("_shutdown", False)
    msg = {"type": "user", "message": {"role": "user", "content": content}, **extra}
    s.sendall((json.dumps({"type": "auth", "token": os.environ["CLAUDE_CODE_MESSAGING_TOKEN"]}) + "\n"
               + json.dumps(msg) + "\n").encode())
    if shut:  # as attend's conduit posts: half-close, then wait briefly for the client's close
        s.shutdown(socket.SHUT_WR)
    s.settimeout(listen)
    got = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except socket.timeout:
        pass
    s.close()
    return {"t": t0, "reply": got.decode("utf-8", "replace")}

def control():
    path = os.path.join(d, "ctl.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)
    while True:
        c, _ = srv.accept()
        req = json.loads(c.makefile().readline())
        try:
            res = post(req["content"], req.get("extra", {}), req.get("listen", 1.0))
        except Exception as e:
            res = {"error": repr(e)}
        c.sendall((json.dumps(res) + "\n").encode())
        c.close()

threading.Thread(target=control, daemon=True).start()
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "probe", "version": "0"}}
        out = {"jsonrpc": "2.0", "id": m["id"], "result": r}
    elif m["method"] == "tools/list":
        out = {"jsonrpc": "2.0", "id": m["id"], "result": {"tools": []}}
    elif m["method"] in ("prompts/list", "resources/list"):
        out = {"jsonrpc": "2.0", "id": m["id"], "result": {m["method"].split("/")[0]: []}}
    else:
        out = {"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""


class Probe:
    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="sock-probe-"))
        self.e2e = E2EWorld(self.tmp)
        self.dir = self.tmp / "probe"
        self.dir.mkdir()
        script = self.dir / "standin.py"
        script.write_text(STANDIN)
        cfg = {
            "mcpServers": {"probe": {"type": "stdio", "command": sys.executable, "args": [str(script), str(self.dir)]}}
        }
        self.e2e.home.joinpath(".claude.json").write_text(json.dumps(cfg))
        self.mcp = self.e2e.tmp / "mcp.json"
        self.mcp.write_text(json.dumps(cfg))
        self.times: dict[int, float] = {}

    def env(self) -> dict[str, Any]:
        path = self.dir / "env.json"
        wait_for(path.exists, 60, "the stand-in to start")
        return dict(json.loads(path.read_text()))

    def post(self, content: str, listen: float = 1.0, **extra: Any) -> dict[str, Any]:
        wait_for((self.dir / "ctl.sock").exists, 60, "the stand-in's control socket")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(self.dir / "ctl.sock"))
        s.sendall((json.dumps({"content": content, "extra": extra, "listen": listen}) + "\n").encode())
        res = json.loads(s.makefile().readline())
        s.close()
        return dict(res)

    def stamp(self, api: FakeAPI) -> None:
        def on(req: Request) -> None:
            self.times[id(req)] = time.time()

        api.on_request = on

    def carried(self, api: FakeAPI, marker: str) -> list[tuple[int, float, str]]:
        """(turn index, arrival time, text) of each turn whose new input holds ``marker``."""
        out = []
        for i, r in enumerate(api.turns):
            for t in latest_user_texts(r):
                if marker in t:
                    out.append((i, self.times.get(id(r), 0.0), t))
        return out

    def close(self) -> None:
        self.e2e.close()


def busy(n: int = 1, sleep: float = 3.0, gap: float = 0.1) -> None:
    """n posts, gap apart, during a tool call that sleeps; what reaches the next requests."""
    p = Probe()
    marks = [f"probe-{uuid.uuid4().hex[:8]}" for _ in range(n)]
    posted: list[dict[str, Any]] = []
    ended: dict[str, float] = {}

    def during() -> None:
        wait_for(lambda: api.consumed >= 1, 60, "the tool call")
        time.sleep(0.8)
        for i, m in enumerate(marks):
            posted.append(p.post(f"hello {m}", listen=1.0 if i == 0 else 0.01))
            time.sleep(gap)

    def after_tool(req: Request) -> str:
        ended["t"] = time.time()
        return "after the sleep"

    api = FakeAPI([bash(f"sleep {sleep}"), after_tool, done("x"), done("y"), done("z")])
    threading.Thread(target=during, daemon=True).start()
    p.e2e.settings({"permissions": {"allow": ["Bash"]}})
    run = p.e2e.claude([], api=api, mcp_config=p.mcp, timeout=60)
    env = p.env()
    print(f"env: socket={env.get('CLAUDE_CODE_MESSAGING_SOCKET')} token={'CLAUDE_CODE_MESSAGING_TOKEN' in env}")
    print(f"rc={run.rc} turns={len(run.turns)}")
    got = 0
    for m in marks:
        hits = [i for i, r in enumerate(run.turns) for t in latest_user_texts(r) if m in t]
        got += bool(hits)
        if n == 1:
            print(f"{m}: in turns {hits}")
    replies = [x.get("reply") or x.get("error") for x in posted][:3]
    print(f"posted {n}, {gap * 1000:.0f} ms apart: {got} reached the model; replies: {replies}")
    for r in run.turns[1:2]:
        for t in latest_user_texts(r):
            if "probe-" in t:
                print("as shown:", t[:400].replace("\n", "⏎"))
    for f in p.e2e.claude_dir.glob("projects/*/*.jsonl"):
        for line in f.read_text().splitlines():
            if marks[0] in line:
                entry = json.loads(line)
                print("transcript:", entry.get("type"), entry.get("operation"), line[:300])
    p.close()


def tui(what: str, n: int = 1) -> None:
    p = Probe()
    args: list[str] = []
    settings: dict[str, Any] = {}
    if what == "bypass":
        args = ["--permission-mode", "bypassPermissions"]
        settings["skipDangerousModePermissionPrompt"] = True
    if what == "prompt":
        args = ["--permission-mode", "default"]
    if what in ("refuse", "hold"):
        settings["crossSessionInbound"] = what
    p.e2e.settings(settings)
    script: list[Any] = [done("Hello.")] + [done(f"answer {i}") for i in range(n + 5)]
    if what == "prompt":
        script = [bash(f"touch {p.tmp}/x", "touch a file")] + [done(f"answer {i}") for i in range(6)]
    api = FakeAPI(script)
    env = {"IS_SANDBOX": "1"} if what == "bypass" else {}  # root may bypass permissions only in a sandbox
    t = TUI(p.e2e, api, args=[*args, "--mcp-config", str(p.mcp)], env=env).start()
    p.stamp(api)
    try:
        env = p.env()
        print(f"env: socket={env.get('CLAUDE_CODE_MESSAGING_SOCKET')} token={'CLAUDE_CODE_MESSAGING_TOKEN' in env}")
        t.type("hi")
        wait_for(lambda: api.consumed >= 1, 60, "the first turn")
        if what == "prompt":
            wait_for(lambda: "Do you want" in t.screen() or "Yes" in t.screen(), 30, "the permission prompt")
        else:
            wait_for(lambda: "Hello." in t.screen(), 30, "the answer")
        time.sleep(2)
        marks = [f"probe-{uuid.uuid4().hex[:8]}" for _ in range(n)]
        before = api.consumed
        res = []
        for m in marks:
            res.append(p.post(f"hello {m}", listen=1.0 if n == 1 else 0.01))
            time.sleep(0.1)
        with_content = lambda: all(p.carried(api, m) for m in marks)  # noqa: E731
        with contextlib.suppress(TimeoutError):
            wait_for(with_content, 15, "the post in a request")
        if what == "prompt":
            print("screen while the prompt is open:\n" + t.screen()[-1200:])
            print(f"turns during the prompt: {api.consumed - before}")
            t.keys("Enter")  # approve
            time.sleep(8)
        got = [m for m in marks if p.carried(api, m)]
        print(f"{what}: posted {n}; reached the model: {len(got)}; turns after the post: {api.consumed - before}")
        print(f"replies: {[x.get('reply') or x.get('error') for x in res][:3]}")
        for m in marks[:1]:
            for i, at, text in p.carried(api, m):
                print(f"turn {i} +{(at - res[0]['t']) * 1000:.0f} ms after the post: {text[:300]!r}")
        print("screen:\n" + t.screen()[-1500:])
    finally:
        t.close()
        p.close()


def shapes(rounds: int = 8) -> None:
    """Which post shape the idle TUI turns into a request fastest, alternating from one running stand-in
    (no process start, no confirmation work beside it): a bare line, attend's post, and the fields the
    client's own SendMessage adds (priority, from, msg_id). Post written -> the request at the model."""
    import statistics

    p = Probe()
    api = FakeAPI([done("Hello.")] + [done(f"answer {i}") for i in range(3 * rounds + 5)])
    t = TUI(p.e2e, api, args=["--mcp-config", str(p.mcp)]).start()
    p.stamp(api)
    from attend.conduits.inbox_socket import HEADER as header

    kinds = {
        "bare": lambda m: (f"hello {m}", {}),
        "attend": lambda m: (
            f"{header} (post {uuid.uuid4().hex})\n[attend] 1 message(s) from humans, not typed at your prompt:\n"
            f"[16:45 UTC] mara (human; #open, id 1796575558.M801968):\n  hello {m}",
            {},
        ),
        "sendmsg": lambda m: (
            f"hello {m}",
            {"priority": "next", "from": "uds:/tmp/none.sock", "msg_id": str(uuid.uuid4())},
        ),
        "shutdown": lambda m: (f"hello {m}", {"_shutdown": True}),
    }
    xs: dict[str, list[float]] = {k: [] for k in kinds}
    try:
        p.env()
        t.type("hi")
        wait_for(lambda: "Hello." in t.screen(), 60, "the answer")
        for r in range(rounds):
            for k, make in kinds.items():
                time.sleep(2.5)
                m = f"probe-{uuid.uuid4().hex[:8]}"
                content, extra = make(m)
                res = p.post(content, listen=0.2 if extra.get("_shutdown") else 0.01, **extra)
                with contextlib.suppress(TimeoutError):
                    wait_for(lambda m=m: bool(p.carried(api, m)), 10, "the post in a request")
                got = p.carried(api, m)
                if got:
                    xs[k].append(got[0][1] - res["t"])
                    print(f"round {r} {k}: {(got[0][1] - res['t']) * 1000:.0f} ms")
                else:
                    print(f"round {r} {k}: never reached the model")
        for k, v in xs.items():
            if v:
                ms = sorted(x * 1000 for x in v)
                print(f"{k}: n={len(v)} p50 {statistics.median(ms):.0f} ms, min {ms[0]:.0f}, max {ms[-1]:.0f}")
    finally:
        t.close()
        p.close()


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "busy"
    arg = int(sys.argv[2]) if len(sys.argv) > 2 else None
    if what == "busy":
        busy()
    elif what == "burst":
        busy(arg or 20, sleep=8, gap=float(sys.argv[3]) if len(sys.argv) > 3 else 0.1)
    elif what == "shapes":
        shapes(arg or 8)
    elif what == "idleburst":
        tui("idle", arg or 20)
    else:
        tui(what)
