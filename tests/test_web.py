"""`attend web`, the human's seat in a browser: the real binary serving, a real browser (Debian's chromium,
driven by Playwright's Python package) reading and typing, the spool checked behind it.

Invariants: without the token's cookie every route is refused; the page shows what the spool holds and
what lands in it live (from the CLI, from the relay), and what it sends is the record `attend send` and
`attend reply` write; a stream that broke resumes from its Last-Event-ID with every message once; nothing
a peer writes runs, loads or restyles anything; the page asks nothing of any other origin; everything
has a key; the title counts the human's unread mail, and only mail to the human notifies.

The browser tests fail, saying what to install, without chromium or playwright (a skip would leave the
run green with the page never tried); ``-m "not browser"`` leaves them out on purpose.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from attend import layout
from attend.domain.core import envelope, rooms
from attend.domain.core.envelope import Signal
from attend.domain.sessions import sessions
from attend.relay import store
from attend.testing.standin import StandIn
from attend.verbs import chat as chat_verb
from attend.verbs import join as join_verb
from attend.verbs import reply as reply_verb
from attend.verbs import send as send_verb
from tests.support import ATTEND, DEADLINE, World, drain, name_at, post, wait_until

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"  # gitignored; CI keeps what lands here
USER = "fixture-human"


def require_browser() -> None:
    """Fail, saying what to install: chromium (Debian's package) and playwright (the dev extra)."""
    missing = []
    if shutil.which("chromium") is None and not Path(CHROMIUM).exists():
        missing.append("chromium (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright (pip install -e '.[dev]')")
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not installed (.ci/run installs them), "
            'or leave these tests out on purpose with -m "not browser"',
            pytrace=False,
        )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Web:
    """`attend web --port 0`, the real binary, as the world's human; its first line is the address."""

    def __init__(self, world: World, *args: str, terminal: bool = False) -> None:
        """``terminal``: started as a human starts it, at a terminal (a pty, its controlling terminal:
        the authority rule asks for one before a human-only act such as releasing a session's lease)."""
        slave = None
        if terminal:
            master, slave = os.openpty()
            self.master = master
        self.proc = subprocess.Popen(
            ["setsid", "--ctty", ATTEND, "web", "--port", "0", *args]
            if terminal
            else [ATTEND, "web", "--port", "0", *args],
            env=world.env,
            cwd=str(world.project("proj")),
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if slave is not None:
            os.close(slave)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self.proc.kill()
            raise AssertionError(f"attend web printed {self.url!r}; stderr: {self.proc.stderr.read()!r}")  # type: ignore[union-attr]
        self.origin = self.url.split("/?", 1)[0]
        self.port = int(self.origin.rsplit(":", 1)[1])
        self.token = self.url.split("token=", 1)[1]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if hasattr(self, "master"):
            os.close(self.master)


@pytest.fixture
def web(world: World) -> Iterator[Web]:
    w = Web(world)
    yield w
    w.stop()


class Page:
    """One browser context on the page: its requests and notifications recorded."""

    def __init__(self, browser: Any, url: str, **kw: Any) -> None:
        self.context = browser.new_context(**{"viewport": {"width": 1200, "height": 760}, **kw})
        self.requests: list[str] = []
        self.context.on("request", lambda r: self.requests.append(r.url))
        # Playwright's own script (a test's probe, outside the page's CSP): record each notification.
        # And every server-sent event the page is given, so a wait that times out says what came.
        self.context.add_init_script(
            "window.__events = []; const ES = window.EventSource;"
            "window.EventSource = function (u, o) { const e = new ES(u, o); window.__events.push(['open', u]);"
            " for (const k of ['message', 'count', 'reset', 'rooms']) e.addEventListener(k, (ev) =>"
            " window.__events.push([k, ev.lastEventId, (ev.data || '').slice(0, 160)]));"
            " e.addEventListener('error', () => window.__events.push(['error', e.readyState])); return e; };"
            "window.EventSource.CLOSED = ES.CLOSED; window.EventSource.OPEN = ES.OPEN;"
        )
        self.context.add_init_script(
            "window.__notes = [];"
            "if (window.Notification) { const N = window.Notification;"
            " window.Notification = function (t, o) { window.__notes.push([t, (o || {}).body]); return new N(t, o); };"
            " window.Notification.permission = N.permission;"
            " window.Notification.requestPermission = N.requestPermission.bind(N); }"
        )
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url)
        self.page.wait_for_selector("body[data-ready='1']", timeout=DEADLINE * 1000)

    def text(self) -> str:
        return str(self.page.inner_text("#messages"))

    def bodies(self) -> list[str]:
        return list(self.page.eval_on_selector_all("#messages .body", "els => els.map(e => e.textContent)"))

    def wait_text(self, text: str) -> None:
        try:
            self.page.wait_for_function(
                "t => document.getElementById('messages').textContent.includes(t)", arg=text, timeout=DEADLINE * 1000
            )
        except Exception as e:
            events = self.page.evaluate("window.__events")
            raise AssertionError(f"{text!r} never shown; the page has {self.bodies()}; it was given {events}") from e

    def wait_title(self, title: str) -> None:
        try:
            self.page.wait_for_function("t => document.title === t", arg=title, timeout=DEADLINE * 1000)
        except Exception as e:
            raise AssertionError(f"the title never became {title!r}: {self.said()}") from e

    def said(self) -> str:
        """What a failed wait reports: the title, the status line, and every event the page was given."""
        status = self.page.evaluate("document.getElementById('status').textContent")
        return f"title {self.page.title()!r}, status {status!r}, events {self.page.evaluate('window.__events')}"

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def pages(browser: Any) -> Iterator[list[Page]]:
    opened: list[Page] = []
    yield opened
    for p in opened:
        p.close()


def open_page(browser: Any, web: Web, pages: list[Page], **kw: Any) -> Page:
    p = Page(browser, web.url, **kw)
    pages.append(p)
    return p


def enrolled(world: World, project: str, name: str) -> StandIn:
    s = world.session(project, name=name)
    sessions.enroll(world.spool, world.context(s).who(), "run")
    return s


def say(world: World, s: StandIn, text: str, to: str | None = None) -> str:
    """A session sends (the send verb, as that session)."""
    return send_verb.run(world.context(s), send_verb.SendRequest(text, to=to or "*")).id


def records(world: World, room: str) -> list[envelope.Signal]:
    spool = world.spool
    return [envelope.parse(spool.read_record(room, n)) for n in spool.room_names(room)]


def request(web: Web, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b"") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=DEADLINE)
    try:
        conn.request(method, path, body=body or None, headers=headers or {})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


# ---------------------------------------------------------------------- the guard (no browser)


def routes() -> list[tuple[str, str]]:
    from attend.web.server import Hub
    from attend.web.server import Page as ServerPage
    from attend.web.server import routes as table

    page = ServerPage.__new__(ServerPage)
    found = [(r.path, m) for r in table(page, Hub(page)) for m in sorted(r.methods or {"GET"}) if m != "HEAD"]
    assert ("/events", "GET") in found and ("/api/send", "POST") in found
    return found


def test_every_route_is_refused_without_the_cookie_and_the_token_opens_once(world: World, web: Web) -> None:
    table = routes()
    for path, method in [*table, ("/no-such-route", "GET")]:
        assert request(web, method, path) == 401, (method, path)
        assert request(web, method, path, {"Cookie": "attend_web=guess"}) == 403, (method, path)
    conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=DEADLINE)
    conn.request("GET", f"/?token={web.token}")
    first = conn.getresponse()
    first.read()
    cookie = first.getheader("set-cookie") or ""
    assert first.status == 303 and "HttpOnly" in cookie and "SameSite=strict" in cookie, cookie
    jar = {"Cookie": cookie.split(";", 1)[0]}
    assert request(web, "GET", f"/?token={web.token}") == 403  # exchanged once: the address opens nothing now
    assert request(web, "GET", "/?token=wrong") == 403
    assert request(web, "GET", "/api/state", jar) == 200
    # A name rebound to 127.0.0.1 is not this page; a write from another origin is refused.
    assert request(web, "GET", "/api/state", {**jar, "Host": f"attacker.example:{web.port}"}) == 403
    other = {**jar, "Origin": "http://127.0.0.1:1", "Content-Type": "application/json"}
    body = json.dumps({"text": "forged", "room": "open", "re": None}).encode()
    assert request(web, "POST", "/api/send", other, body) == 403
    assert request(web, "POST", "/api/send", {**jar, "Content-Type": "application/json"}, body) == 403
    assert not world.spool.room_names(rooms.OPEN), "a refused write wrote nothing"


def cookie_of(web: Web) -> dict[str, str]:
    """The token exchanged, as the browser would: the cookie's header, and the page's own origin."""
    conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=DEADLINE)
    conn.request("GET", f"/?token={web.token}")
    answer = conn.getresponse()
    answer.read()
    conn.close()
    cookie = (answer.getheader("set-cookie") or "").split(";", 1)[0]
    return {"Cookie": cookie, "Origin": web.origin, "Content-Type": "application/json"}


def test_bad_writes_are_refused_with_a_reason_and_change_nothing(world: World, web: Web) -> None:
    jar = cookie_of(web)
    before = world.spool.room_names(rooms.OPEN)
    for body in [
        b"not json",
        b"[1, 2]",
        b"[" * 100_000,  # deep nesting
        json.dumps({"text": "x" * (300 * 1024), "room": "open"}).encode(),  # past the body's bound
        json.dumps({"text": 5, "room": "open"}).encode(),
        json.dumps({"text": "hello", "room": "no-such-room"}).encode(),
        json.dumps({"text": "@nobody-here hello", "room": "open"}).encode(),
        json.dumps({"text": "   ", "room": "open"}).encode(),
        json.dumps({"text": "hello", "room": "open", "re": "not-an-id"}).encode(),
    ]:
        conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=DEADLINE)
        conn.request("POST", "/api/send", body=body, headers=jar)
        answer = conn.getresponse()
        doc = json.loads(answer.read())
        conn.close()
        assert answer.status == 400 and doc["error"] and "\n" not in doc["error"], (body[:60], answer.status, doc)
    for ids in ["x", ["../../etc/passwd"], ["a"] * 2000]:
        assert request(web, "POST", "/api/read", jar, json.dumps({"ids": ids}).encode()) == 400
    assert request(web, "GET", "/events", {"Cookie": jar["Cookie"], "Last-Event-ID": "../x"}) == 400
    assert world.spool.room_names(rooms.OPEN) == before


def test_a_taken_port_is_one_line_and_exit_1(world: World, web: Web) -> None:
    r = world.attend("web", "--port", str(web.port))
    assert r.returncode == 1 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and f"port {web.port}" in r.stderr and "taken" in r.stderr, r.stderr
    bad = world.attend("web", "--port", "70000")
    assert bad.returncode == 2 and "not a port" in bad.stderr, bad


def test_open_hands_the_printed_address_to_the_default_browser(world: World) -> None:
    opened = world.tmp / "opened"
    script = world.tmp / "browser.sh"
    script.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    script.chmod(0o755)
    world.env["BROWSER"] = f"{script} %s"  # Python's webbrowser honours $BROWSER
    web = Web(world, "--open")
    try:
        wait_until(opened.exists, "the browser started with the address")
        wait_until(lambda: opened.read_text() == web.url, lambda: f"{opened.read_text()!r} is the address")
    finally:
        web.stop()


def test_a_claude_session_is_refused_the_page(world: World) -> None:
    s = world.session()
    r = s.run([ATTEND, "web", "--port", "0"])
    assert r.rc == 2 and "human's seat" in r.stderr and "http://" not in r.stdout, r


def test_send_and_the_help_never_import_the_web_server(world: World) -> None:
    probe = (
        "import sys; from attend.cli import entry, app; from attend.verbs import web;"
        "print(sorted(m for m in ('starlette', 'uvicorn', 'sse_starlette', 'attend.web') if m in sys.modules))"
    )
    r = subprocess.run(
        [str(Path(ATTEND).parent / "python"), "-c", probe], capture_output=True, text=True, env=world.env
    )
    assert r.stdout.strip() == "[]", r


# ---------------------------------------------------------------------- the page


def test_history_shows_and_a_cli_send_and_a_relayed_message_appear_live(
    world: World, web: Web, browser: Any, pages: list[Page]
) -> None:
    hana = enrolled(world, "api", "Hana")
    say(world, hana, "history: the build is green")
    page = open_page(browser, web, pages)
    assert "history: the build is green" in page.text()
    assert "Hana" in page.text() and "claude" in page.text()

    r = world.attend("send", "--to", "*", "live from the CLI")
    assert r.returncode == 0, r
    page.wait_text("live from the CLI")

    # A relayed arrival, written as the relay writes one (attend.relay.store), from host "remote-b".
    name = name_at(time.time()).rsplit(".", 1)[0] + ".remote-b"
    sig = Signal(
        id=name,
        sender="Kai",
        from_kind="agent",
        from_id="kai-session",
        to="*",
        room=rooms.OPEN,
        origin="/srv/app",
        body="relayed from the other machine",
        at=layout.name_time(name),
        client="codex",
    )
    headers = {"Nats-Msg-Id": name, store.FROM_HOST: "remote-b"}
    me = layout.name_host(layout.unique_name())
    got = store.receive(world.spool, me, "attend.from.remote-b.to.all.open", headers, envelope.render(sig))
    assert got == "stored"
    page.wait_text("relayed from the other machine")
    row = page.page.locator("article.msg", has_text="relayed from the other machine")
    assert "Kai@remote-b" in row.inner_text() and "codex" in row.inner_text()  # the host it came from
    assert page.bodies().count("live from the CLI") == 1
    assert all(u.startswith(web.origin + "/") for u in page.requests), page.requests  # nothing off the origin
    assert not page.errors, page.errors


def test_compose_and_reply_land_in_the_spool_threaded(world: World, web: Web, browser: Any, pages: list[Page]) -> None:
    tao = enrolled(world, "web", "Tao")
    asked = say(world, tao, "who takes the migration?")
    page = open_page(browser, web, pages)
    p = page.page
    p.fill("#text", "a plain line to #open")
    p.press("#text", "Enter")
    page.wait_text("a plain line to #open")
    sent = [s for s in records(world, rooms.OPEN) if s.body == "a plain line to #open"]
    assert len(sent) == 1 and sent[0].from_id == USER and sent[0].re is None

    p.fill("#text", "@nobody-here where does this go?")  # refused inline: nothing sent, the line kept
    p.press("#text", "Enter")
    p.wait_for_selector("#status.error")
    assert "nobody-here" in p.inner_text("#status") and p.input_value("#text").startswith("@nobody-here")
    assert not [s for s in records(world, rooms.OPEN) if "where does this go" in s.body]
    p.fill("#text", "")
    asked_row = p.locator("article.msg", has_text="who takes the migration?")
    asked_row.hover()  # a message's buttons show under the pointer (or when chosen)
    asked_row.locator("button.reply").click()
    p.fill("#text", "I do")
    p.press("#text", "Enter")
    page.wait_text("I do")
    reply = [s for s in records(world, rooms.OPEN) if s.body == "I do"]
    assert len(reply) == 1 and reply[0].re == asked
    order = page.bodies()
    assert order.index("I do") == order.index("who takes the migration?") + 1, order
    assert "d1" in (p.locator("article.msg", has_text="I do").get_attribute("class") or "")
    # The same record `attend send` writes: the CLI's own line, side by side.
    world.attend("send", "--to", "*", "from the CLI")
    cli = next(s for s in records(world, rooms.OPEN) if s.body == "from the CLI")
    assert (cli.from_kind, cli.from_id, cli.to, cli.sender) == (sent[0].from_kind, USER, sent[0].to, sent[0].sender)


def test_a_direct_conversation_is_what_the_human_and_that_session_wrote_each_other(
    world: World, web: Web, browser: Any, pages: list[Page]
) -> None:
    hana, tao = enrolled(world, "api", "Hana"), enrolled(world, "web", "Tao")
    page = open_page(browser, web, pages)
    p = page.page
    p.fill("#text", "@Ha")
    p.press("#text", "Tab")  # completes a live peer's name, as chat's Tab does
    p.wait_for_function("() => document.getElementById('text').value === '@Hana '")
    p.keyboard.type("review please")
    p.press("#text", "Enter")
    conversation = p.locator("#rooms button", has_text="@Hana")
    conversation.wait_for()  # the conversation joins the rooms as it starts
    direct = rooms.direct_room(hana.session_id)
    asked = world.spool.room_names(direct)[-1]
    reply_verb.run(world.context(hana), reply_verb.ReplyRequest("done, one nit", re=asked))
    send_verb.run(world.context(tao), send_verb.SendRequest("tao to hana, not yours", to=hana.session_id))
    p.wait_for_function("() => /@Hana\\s*1/.test(document.getElementById('rooms').textContent)")
    conversation.click()
    page.wait_text("done, one nit")
    assert page.bodies() == ["review please", "done, one nit"]  # Tao's mail to Hana is not this conversation
    send_verb.run(world.context(tao), send_verb.SendRequest("tao to hana, live", to=hana.session_id))
    say(world, hana, "and one more", to=USER)
    page.wait_text("and one more")
    assert page.bodies() == ["review please", "done, one nit", "and one more"]


class Cable:
    """A TCP forwarder between the browser and the server, to pull out: ``cut`` drops every connection
    and refuses new ones until ``mend``. It keeps what the browser sent, to read its Last-Event-ID."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.up = True
        self.socks: list[socket.socket] = []
        self.sent = bytearray()
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            # Deciding and registering under the lock cut takes: a connection the browser opened as the
            # cable was cut (a fetch the page made just then) is refused or dropped with the rest, never
            # left open to carry the stream through the gap.
            with self.lock:
                if not self.up:
                    conn.close()
                    continue
                upstream = socket.create_connection(("127.0.0.1", self.target))
                self.socks += [conn, upstream]
            threading.Thread(target=self._pump, args=(conn, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, conn, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, keep: bool) -> None:
        try:
            while data := src.recv(65536):
                if keep:
                    with self.lock:
                        self.sent += data
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        with self.lock:
            self.up = False
            socks, self.socks = self.socks, []
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def mend(self) -> None:
        with self.lock:
            self.sent.clear()
            self.up = True

    def close(self) -> None:
        self.cut()
        self.listener.close()


def test_a_message_that_lands_while_its_room_is_loading_is_shown(
    world: World, web: Web, browser: Any, pages: list[Page]
) -> None:
    """The room's look is answered before the message lands and reaches the page after the stream
    gave it: the page keeps what the stream gave, so the room drawn from the older look still shows it."""
    hana = enrolled(world, "api", "Hana")
    say(world, hana, "already here")
    page = open_page(browser, web, pages)
    page.wait_text("already here")
    held_back: list[Any] = []
    page.page.route("**/api/room?*", lambda route: held_back.append(route))
    page.page.click('#rooms button[data-room="open"]')
    for _ in range(int(DEADLINE * 50)):  # the page's request to mark it read, held at the route
        if held_back:
            break
        page.page.wait_for_timeout(20)
    assert held_back, f"Enter on the message asked for no mark: {page.said()}"
    answer = held_back[0].fetch()  # the server's look, taken now: before the message below
    late = say(world, hana, "landed while the room loaded")
    page.page.wait_for_function("id => S.shown.has(id)", arg=late, timeout=DEADLINE * 1000)
    held_back[0].fulfill(response=answer)
    page.page.wait_for_function("() => S.byId.size >= 2 && document.querySelector('#messages .body')")
    page.wait_text("landed while the room loaded")
    assert page.bodies().count("landed while the room loaded") == 1
    assert not page.errors, page.errors


def test_a_page_whose_connection_broke_shows_every_message_of_the_gap_once(
    world: World, web: Web, browser: Any, pages: list[Page]
) -> None:
    hana = enrolled(world, "api", "Hana")
    say(world, hana, "before the cut")
    cable = Cable(web.port)
    try:
        page = Page(browser, f"http://127.0.0.1:{cable.port}/?token={web.token}")
        pages.append(page)
        page.wait_text("before the cut")
        last = say(world, hana, "the last one seen before the cut")
        page.wait_text("the last one seen before the cut")
        page.page.evaluate("window.__before_the_cut = 1")
        cable.cut()
        page.page.wait_for_function("() => document.getElementById('conn').textContent.startsWith('reconnecting')")
        for i in range(5):
            say(world, hana, f"sent in the gap {i}")
        r = world.attend("send", "--to", "*", "the human's CLI in the gap")
        assert r.returncode == 0, r.stderr
        assert all(f"sent in the gap {i}" not in page.text() for i in range(5))
        cable.mend()
        for i in range(5):
            page.wait_text(f"sent in the gap {i}")
        page.wait_text("the human's CLI in the gap")
        bodies = page.bodies()
        for body in ["before the cut", "the last one seen before the cut", *(f"sent in the gap {i}" for i in range(5))]:
            assert bodies.count(body) == 1, (body, bodies)
        assert bodies.count("the human's CLI in the gap") == 1
        in_gap = [b for b in bodies if b.startswith("sent in the gap")]
        assert in_gap == [f"sent in the gap {i}" for i in range(5)], in_gap  # in send order
        # The stream itself resumed from the last message the page had, in the same page (no reload).
        sent = cable.sent.decode("latin-1")
        assert re.search(r"(?im)^last-event-id: " + re.escape(last) + r"\r$", sent), sent[:2000]
        assert page.page.evaluate("window.__before_the_cut") == 1
    finally:
        cable.close()


HOSTILE_BODY = (
    '<img src="http://evil.invalid/x.png" onerror="window.pwned=1">'
    "<script>window.pwned=2</script><style>body{display:none}</style>"
    '<a href="javascript:window.pwned=3">click</a> ![x](http://evil.invalid/md.png) \x1b[31mred\u202eevil'
)
HOSTILE_NAME = '<b onmouseover="window.pwned=4">Mallory</b>'


def test_hostile_bodies_and_names_are_shown_as_text_and_nothing_leaves_the_origin(
    world: World, web: Web, browser: Any, pages: list[Page]
) -> None:
    spool = world.spool
    name = name_at(time.time())
    sig = Signal(
        id=name,
        sender=HOSTILE_NAME,
        from_kind="agent",
        from_id="mallory",
        to="*",
        room=rooms.OPEN,
        origin="/x",
        body=HOSTILE_BODY,
        at=layout.name_time(name),
        client='"><img src=x>',
    )
    spool.publish([rooms.OPEN], envelope.render(sig), name)
    page = open_page(browser, web, pages)
    post(spool, rooms.OPEN, HOSTILE_BODY + " live")  # and one landing while the page is open
    page.wait_text("red")
    page.page.wait_for_function("() => document.querySelectorAll('#messages .body').length >= 2")
    p = page.page
    assert p.evaluate("window.pwned") is None
    assert (
        p.evaluate("document.querySelectorAll('#messages img, #messages script, #messages style, #messages a').length")
        == 0
    )
    assert p.is_visible("#messages")
    body = page.bodies()[0]
    assert "<script>window.pwned=2</script>" in body and "\\x1b[31m" in body and "\\u202e" in body, body
    assert "<b onmouseover" in page.text()
    assert all(u.startswith(web.origin + "/") for u in page.requests), page.requests
    assert not page.errors, page.errors


def test_the_keyboard_reaches_everything(world: World, web: Web, browser: Any, pages: list[Page]) -> None:
    tao = enrolled(world, "web", "Tao")
    say(world, tao, "first line")
    say(world, tao, "second line")
    page = open_page(browser, web, pages)
    kb = page.page.keyboard
    assert page.page.evaluate("document.activeElement.id") == "text"  # typing goes to the compose box
    kb.press("Escape")  # to the conversation: the newest message chosen
    kb.press("ArrowUp")
    chosen = page.page.evaluate("document.activeElement.textContent")
    assert "first line" in chosen
    kb.press("r")
    assert page.page.evaluate("document.activeElement.id") == "text"
    kb.type("answered by keys")
    kb.press("Enter")
    page.wait_text("answered by keys")
    first = next(s for s in records(world, rooms.OPEN) if s.body == "first line")
    assert next(s for s in records(world, rooms.OPEN) if s.body == "answered by keys").re == first.id
    kb.press("Alt+ArrowDown")  # the next room: the human's mailbox
    page.page.wait_for_function("() => document.getElementById('room-title').textContent === '@fixture-human'")
    kb.press("Escape")
    kb.press("g")  # the rooms list
    assert page.page.evaluate("document.activeElement.dataset.room") == rooms.human_room(USER)
    kb.press("ArrowUp")
    kb.press("Enter")
    page.page.wait_for_function("() => document.getElementById('room-title').textContent === '#open'")
    kb.press("Escape")
    kb.press("?")
    assert page.page.evaluate("document.getElementById('help').open")
    kb.press("Escape")
    assert not page.page.evaluate("document.getElementById('help').open")
    kb.press("c")
    assert page.page.evaluate("document.activeElement.id") == "text"
    kb.press("Shift+Tab")  # Tab's order reaches the conversation too: its newest message, chosen
    focused = page.page.evaluate("document.activeElement.closest('#messages') !== null")
    assert focused, page.page.evaluate("document.activeElement.outerHTML")


def test_the_title_counts_unread_mail_and_only_mail_to_the_human_notifies(
    world: World, web: Web, browser: Any, pages: list[Page]
) -> None:
    hana = enrolled(world, "api", "Hana")
    page = open_page(browser, web, pages, permissions=["notifications"])
    assert page.page.title() == "attend"
    say(world, hana, "for the human: please review", to=USER)
    page.wait_title("(1) attend")
    say(world, hana, "between agents, on #open")
    page.wait_text("between agents, on #open")
    notes = page.page.evaluate("window.__notes")
    assert notes == [["attend: Hana", "for the human: please review"]], notes
    # Opening the mailbox and scrolling through it reads nothing; opening the message does.
    page.page.locator("#rooms button", has_text="@fixture-human").click()
    page.wait_text("for the human: please review")
    page.page.mouse.wheel(0, 500)
    assert page.page.title() == "(1) attend"
    assert chat_verb.mailbox_unread(world.spool, USER)
    page.page.keyboard.press("Escape")
    page.page.keyboard.press("Enter")
    page.wait_title("attend")
    assert chat_verb.mailbox_unread(world.spool, USER) == []
    for n in (1, 2):  # arriving while the mailbox is open: shown unread until marked, all at once
        say(world, hana, f"more mail {n}", to=USER)
    page.wait_title("(2) attend")
    page.wait_text("more mail 2")
    assert page.page.locator("article.msg.unread").count() == 2
    page.page.click("#mark-all")
    page.wait_title("attend")
    assert chat_verb.mailbox_unread(world.spool, USER) == [] and page.page.locator("article.msg.unread").count() == 0


def test_a_marked_read_answer_that_comes_after_newer_mail_leaves_the_newer_count_in_the_title(
    world: World, web: Web, browser: Any, pages: list[Page]
) -> None:
    """The answer to marking a message read carries the count as the server read it then; mail that
    lands before the answer reaches the page makes the stream's count newer. The older one is left
    unused: the title says the newer, and no event would come to correct it."""
    hana = enrolled(world, "api", "Hana")
    page = open_page(browser, web, pages)
    say(world, hana, "first mail", to=USER)
    page.wait_title("(1) attend")
    page.page.locator("#rooms button", has_text="@fixture-human").click()
    page.wait_text("first mail")
    held_back: list[Any] = []
    page.page.route("**/api/read", lambda route: held_back.append(route))
    page.page.keyboard.press("Escape")
    page.page.keyboard.press("Enter")
    for _ in range(int(DEADLINE * 50)):  # the page's request to mark it read, held at the route
        if held_back:
            break
        page.page.wait_for_timeout(20)
    assert held_back, f"Enter on the message asked for no mark: {page.said()}"
    answer = held_back[0].fetch()  # marked now: the server's count is 0
    page.wait_title("attend")  # the stream's count for the mark
    say(world, hana, "second mail", to=USER)
    page.wait_title("(1) attend")  # newer than the answer still held back
    held_back[0].fulfill(response=answer)
    try:
        page.page.wait_for_function("() => document.getElementById('status').textContent.includes('Marked')")
    except Exception as e:
        raise AssertionError(f"the mark's answer never shown: {page.said()}") from e
    assert page.page.title() == "(1) attend", page.said()
    assert not page.errors, page.errors


# ---------------------------------------------------------------------- who holds which files


def page_jar(page: Page, web: Web) -> dict[str, str]:
    """The headers of a write as the open page makes it: its own cookie, its own origin."""
    (cookie,) = [c for c in page.context.cookies() if c["name"] == "attend_web"]
    return {"Cookie": f"attend_web={cookie['value']}", "Origin": web.origin, "Content-Type": "application/json"}


def leased_repo(world: World, project: str = "proj") -> Path:
    """A git working tree for leases (their globs are relative to its root)."""
    path = world.project(project)
    if not (path / ".git").exists():
        subprocess.run(["git", "init", "-q", str(path)], check=True)
        (path / "src" / "api").mkdir(parents=True)
        (path / "src" / "api" / "routes.py").write_text("x = 1\n")
    return path


def held(page: Page) -> str:
    return str(page.page.inner_text("#held"))


def wait_status(page: Page, text: str) -> None:
    page.page.wait_for_function(
        "t => document.getElementById('status').textContent.includes(t)", arg=text, timeout=DEADLINE * 1000
    )


def wait_held(page: Page, present: str | None = None, absent: str | None = None) -> None:
    page.page.wait_for_function(
        "([yes, no]) => { const t = document.getElementById('held').textContent;"
        " return (yes === null || t.includes(yes)) && (no === null || !t.includes(no)); }",
        arg=[present, absent],
        timeout=DEADLINE * 1000,
    )


def test_the_files_held_panel_shows_a_cli_lease_live_and_drops_it_on_release_and_when_its_holder_ends(
    world: World, web: Web, browser: Any, pages: list[Page]
) -> None:
    leased_repo(world)
    hana = world.session("proj", name="Hana")
    page = open_page(browser, web, pages)
    wait_held(page, "no file is leased")  # the panel is filled as the stream opens, after the page is ready
    r = hana.attend("lease", "src/api", "--reason", "reshaping the routes")
    assert r.rc == 0, r.stderr
    wait_held(page, "src/api")  # live: no reload
    row = page.page.locator("#held li", has_text="src/api").inner_text()
    assert "Hana" in row and "reshaping the routes" in row and "in proj" in row, row
    r = hana.attend("release")
    assert r.rc == 0, r.stderr
    wait_held(page, "no file is leased", "src/api")
    assert hana.attend("lease", "README.md").rc == 0
    wait_held(page, "README.md")
    hana.close()  # its client ends: nothing is written, and the lease is gone with it
    wait_held(page, "no file is leased", "README.md")
    assert not page.errors, page.errors


@pytest.fixture
def web_at_terminal(world: World) -> Iterator[Web]:
    w = Web(world, terminal=True)
    yield w
    w.stop()


def test_the_human_releases_a_sessions_lease_only_after_saying_yes(
    world: World, web_at_terminal: Web, browser: Any, pages: list[Page]
) -> None:
    web = web_at_terminal
    leased_repo(world)
    hana = world.session("proj", name="Hana")
    assert hana.attend("lease", "src/api", "src/api/routes.py", "--reason", "mid-refactor").rc == 0
    lease_file = world.spool_root / "sessions" / hana.session_id / "leases"
    before = lease_file.read_bytes()
    page = open_page(browser, web, pages)
    p = page.page
    wait_held(page, "src/api/routes.py")
    # Without the page's confirmation the server releases nothing (the page's own cookie and origin).
    jar = page_jar(page, web)
    unconfirmed = json.dumps({"session": hana.session_id, "glob": "src/api"}).encode()
    assert request(web, "POST", "/api/release", jar, unconfirmed) == 400
    assert lease_file.read_bytes() == before
    row = p.locator("#held li", has_text="src/api").filter(has_not_text="routes.py")
    row.locator("button.release").click()
    assert p.evaluate("document.getElementById('release').open")
    assert "src/api" in p.inner_text("#release-what") and "Hana" in p.inner_text("#release-what")
    p.keyboard.press("Escape")  # no: nothing released
    p.wait_for_function("() => !document.getElementById('release').open")
    wait_status(page, "Kept")  # the dialog's close event runs after it is no longer open
    assert lease_file.read_bytes() == before
    row.locator("button.release").click()
    p.click("#release-yes")
    wait_held(page, "src/api/routes.py")
    page.page.wait_for_function(
        "() => !Array.from(document.querySelectorAll('#held .glob')).some(g => g.textContent === 'src/api')"
    )
    wait_status(page, "released 1 lease of Hana: src/api")  # the stream may redraw the panel first
    listed = json.loads(world.attend("leases", "--json").stdout)["leases"]
    assert [x["glob"] for x in listed] == ["src/api/routes.py"]  # the other lease stays
    assert not page.errors, page.errors


def test_a_hostile_lease_reason_is_inert(world: World, web: Web, browser: Any, pages: list[Page]) -> None:
    leased_repo(world)
    mallory = world.session("proj", name="Mallory")
    assert mallory.attend("lease", "src/api", "--reason", HOSTILE_BODY[:180]).rc == 0
    page = open_page(browser, web, pages)
    wait_held(page, "src/api")
    p = page.page
    assert p.evaluate("window.pwned") is None
    assert p.evaluate("document.querySelectorAll('#held img, #held script, #held style, #held a').length") == 0
    assert "<img src=" in held(page)
    p.locator("#held button.release").click()
    assert "<img src=" in p.inner_text("#release-what")
    assert p.evaluate("document.querySelectorAll('#release img, #release script').length") == 0
    p.keyboard.press("Escape")
    assert p.evaluate("window.pwned") is None
    assert all(u.startswith(web.origin + "/") for u in page.requests), page.requests


# ---------------------------------------------------------------------- what inbound rules hold


def sent_states(s: StandIn) -> dict[str, dict[str, str]]:
    """Where each message ``s`` sent stands, for each recipient: its receipts (`attend inbox --sent`)."""
    out = s.attend("inbox", "--sent", "--json")
    assert out.rc == 0, out.stderr
    return {m["id"]: {r["session_id"]: r["state"] for r in m["recipients"]} for m in json.loads(out.stdout)["messages"]}


def test_the_human_accepts_or_declines_what_a_sessions_inbound_rule_holds(
    world: World, web: Web, browser: Any, pages: list[Page]
) -> None:
    hana, tao = enrolled(world, "api", "Hana"), enrolled(world, "web", "Tao")
    assert tao.attend("inbound", "hold").rc == 0
    page = open_page(browser, web, pages)
    p = page.page
    assert not p.is_visible("#waiting")  # nothing waits: no panel
    first = say(world, hana, "please look at the schema diff", to=tao.session_id)
    second = say(world, hana, HOSTILE_BODY, to=tao.session_id)
    p.wait_for_function("() => document.querySelectorAll('#waiting li').length === 2", timeout=DEADLINE * 1000)
    row = p.locator("#waiting li", has_text="please look at the schema diff")
    assert "Hana" in row.inner_text() and "Tao" in row.inner_text()
    # A held subject is text: nothing of it runs or loads.
    assert p.evaluate("window.pwned") is None
    assert p.evaluate("document.querySelectorAll('#waiting img, #waiting script, #waiting a').length") == 0
    assert "<img src=" in p.inner_text("#waiting")
    assert world.spool.delivery_state(tao.session_id, first) == "held"
    assert "schema diff" not in drain(world, tao.session_id).stdout  # held: no conduit shows it

    row.locator("button.accept").click()
    p.wait_for_function("() => document.querySelectorAll('#waiting li').length === 1", timeout=DEADLINE * 1000)
    wait_status(page, "Accepted")  # the stream may redraw the list before the answer comes
    assert "schema diff" in drain(world, tao.session_id).stdout  # shown once by the next conduit…
    assert "schema diff" not in drain(world, tao.session_id).stdout  # …and only once

    p.locator("#waiting li button.decline").click()
    p.wait_for_selector("#waiting-box", state="hidden", timeout=DEADLINE * 1000)
    states = sent_states(hana)  # the sender's receipts say what became of each
    assert states[first] == {tao.session_id: "delivered"} or states[first] == {tao.session_id: "seen"}, states
    assert states[second] == {tao.session_id: "declined"}, states
    assert "pwned" not in drain(world, tao.session_id).stdout
    # A decision the page did not see coming (decided already, or a forged id) is one line, nothing changed.
    jar = page_jar(page, web)
    for body in [{"id": second, "action": "accept"}, {"id": "../x", "action": "accept"}, {"id": "x", "action": "eat"}]:
        assert request(web, "POST", "/api/inbound", jar, json.dumps(body).encode()) in (400, 404), body
    assert world.spool.delivery_state(tao.session_id, second) == "declined"
    assert not page.errors, page.errors


# ---------------------------------------------------------------------- search


def test_search_finds_a_message_marks_the_match_and_opens_it_in_its_room(
    world: World, web: Web, browser: Any, pages: list[Page]
) -> None:
    hana, tao = enrolled(world, "api", "Hana"), enrolled(world, "web", "Tao")
    for s in (hana, tao):
        join_verb.run(world.context(s), join_verb.JoinRequest("deploy"))
    found = say(world, tao, "The login test times out in the OAuth step, twice on main.", to="#deploy")
    say(world, hana, "lunch at noon?")
    for i in range(30):  # the room on screen is another one, with more in it
        say(world, hana, f"line {i} of #open")
    page = open_page(browser, web, pages)
    p = page.page
    p.keyboard.press("Escape")
    p.keyboard.press("/")  # the key to the search box
    assert p.evaluate("document.activeElement.id") == "q"
    p.keyboard.type("oauth")
    p.keyboard.press("Enter")
    p.wait_for_function("() => document.getElementById('room-title').textContent === 'Search: oauth'")
    results = p.locator("#messages article.result")
    assert results.count() == 1
    row = results.first.inner_text()
    assert "Tao" in row and "#deploy" in row and "times out in the OAuth step" in row, row
    assert p.eval_on_selector_all("#messages mark", "ms => ms.map(m => m.textContent)") == ["OAuth"]
    p.keyboard.press("ArrowDown")  # to the results; Enter opens the chosen one in its room
    p.keyboard.press("Enter")
    p.wait_for_function("() => document.getElementById('room-title').textContent === '#deploy'")
    chosen = p.locator("#messages article[aria-selected='true']")
    assert chosen.get_attribute("data-id") == found and "OAuth step" in chosen.inner_text()
    # A query the engine could not take as written is read as well as it can be, never an error page.
    p.fill("#q", 'OAuth" NEAR( -')
    p.press("#q", "Enter")
    p.wait_for_function("() => document.getElementById('room-title').textContent.startsWith('Search: OAuth')")
    p.keyboard.press("Escape")  # back to the room, the box cleared
    p.wait_for_function("() => document.getElementById('room-title').textContent === '#deploy'")
    assert not page.errors, page.errors


def test_hostile_text_in_search_results_is_inert_and_marked_as_text(
    world: World, web: Web, browser: Any, pages: list[Page]
) -> None:
    hana = enrolled(world, "api", "Hana")
    say(world, hana, HOSTILE_BODY + " **not a mark** pwnedword")
    page = open_page(browser, web, pages)
    p = page.page
    p.fill("#q", "pwnedword")
    p.press("#q", "Enter")
    p.wait_for_selector("#messages article.result")
    assert p.evaluate("window.pwned") is None
    assert (
        p.evaluate("document.querySelectorAll('#messages img, #messages script, #messages style, #messages a').length")
        == 0
    )
    # Only the match is marked; the body's own ** are its text, not a mark.
    assert p.eval_on_selector_all("#messages mark", "ms => ms.map(m => m.textContent)") == ["pwnedword"]
    assert "**not a mark**" in p.inner_text("#messages article.result")
    assert all(u.startswith(web.origin + "/") for u in page.requests), page.requests
    assert not page.errors, page.errors


def scene(world: World) -> None:
    """A morning's bus: two sessions in #deploy, a thread in #open, mail for the human, a relayed line, a
    lease on a folder, a message held by its recipient's inbound rule."""
    leased_repo(world, "api")
    hana, tao = enrolled(world, "api", "Hana"), enrolled(world, "web", "Tao")
    for s in (hana, tao):
        join_verb.run(world.context(s), join_verb.JoinRequest("deploy"))
    leased = hana.attend("lease", "src/api", "--reason", "schema v2 migration")
    assert leased.rc == 0, leased.stderr
    asked = say(world, hana, "Schema v2 is merged. Who takes the client migration?")
    send_verb.run(world.context(tao), send_verb.SendRequest("I will, after lunch: the web client first.", re=asked))
    thanks = world.attend("reply", "--re", asked, "Thanks both. Smoke tests before 22:00, please.")
    assert thanks.returncode == 0, thanks
    say(world, tao, "Deploy window tonight at 22:00; the API needs ten minutes.", to="#deploy")
    say(
        world,
        tao,
        "Can you look at the flaky login test? It failed twice on main\nwith a timeout in the OAuth step.",
        to=USER,
    )
    name = name_at(time.time()).rsplit(".", 1)[0] + ".build-box"
    sig = Signal(
        id=name,
        sender="Kai",
        from_kind="agent",
        from_id="kai-session",
        to="*",
        room=rooms.OPEN,
        origin="/srv/ci",
        body="Nightly build green on build-box (412 tests).",
        at=layout.name_time(name),
        client="codex",
    )
    me = layout.name_host(layout.unique_name())
    headers = {"Nats-Msg-Id": name, store.FROM_HOST: "build-box"}
    assert (
        store.receive(world.spool, me, "attend.from.build-box.to.all.open", headers, envelope.render(sig)) == "stored"
    )
    uma = enrolled(world, "ops", "Uma")  # enrolled last: what comes to Uma from now on waits for a look
    assert uma.attend("inbound", "hold").rc == 0
    say(world, hana, "Can I take over the deploy script while you fix the login test?", to=uma.session_id)


def test_a_screenshot_at_desk_and_phone_width(world: World, web: Web, browser: Any, pages: list[Page]) -> None:
    scene(world)
    page = open_page(browser, web, pages)
    page.wait_text("Nightly build green")
    ARTIFACTS.mkdir(exist_ok=True)
    page.page.screenshot(path=str(ARTIFACTS / "web.png"))
    page.page.locator("#held button.release").click()  # the human's release asks first
    page.page.screenshot(path=str(ARTIFACTS / "web-release.png"))
    page.page.keyboard.press("Escape")
    page.page.fill("#q", "client migration")  # a search, its matches marked
    page.page.press("#q", "Enter")
    page.page.wait_for_selector("#messages article.result mark")
    page.page.screenshot(path=str(ARTIFACTS / "web-search.png"))
    page.page.keyboard.press("Escape")
    page.page.wait_for_function("() => document.getElementById('room-title').textContent === '#open'")
    page.page.set_viewport_size({"width": 390, "height": 760})
    page.page.screenshot(path=str(ARTIFACTS / "web-phone.png"))
    width = page.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width} px wide at a phone's 390"
    assert page.page.is_visible("#text") and page.page.is_visible("#menu") and not page.page.is_visible("#rooms")
    page.page.click("#menu")  # the rooms open over the conversation
    assert page.page.is_visible("#rooms")
    page.page.screenshot(path=str(ARTIFACTS / "web-phone-rooms.png"))
    page.page.locator("#rooms button", has_text="#deploy").click()
    page.wait_text("Deploy window tonight")
    assert not page.page.is_visible("#rooms")
    assert os.path.getsize(ARTIFACTS / "web.png") > 0


CONTRAST = r"""() => {
  const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const lum = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const rgb = (s) => {
    const m = /rgba?\(([^)]+)\)/.exec(s);
    return m ? m[1].split(/[ ,\/]+/).filter(Boolean).map(Number) : null;
  };
  const under = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c && (c.length < 4 || c[3] > 0)) return c;
    }
    return [255, 255, 255];
  };
  const low = [];
  for (const el of document.querySelectorAll("body *")) {
    const st = getComputedStyle(el);
    if (!el.getClientRects().length || st.visibility === "hidden") continue;
    if (!Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
    const a = lum(rgb(st.color)), b = lum(under(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) low.push(`${el.tagName}.${el.className} ${st.color} on ${under(el)}: ${ratio.toFixed(2)}`);
  }
  return low;
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_text_passes_wcag_aa_contrast_and_the_first_page_is_small(
    world: World, web: Web, browser: Any, pages: list[Page], scheme: str
) -> None:
    scene(world)
    page = open_page(browser, web, pages, color_scheme=scheme)
    sizes = page.page.evaluate(
        "() => [performance.getEntriesByType('navigation')[0], ...performance.getEntriesByType('resource')]"
        ".reduce((n, e) => n + e.transferSize, 0)"
    )
    assert sizes < 150 * 1024, f"the first page took {sizes} bytes"
    assert page.page.evaluate(CONTRAST) == []
    page.page.locator("#rooms button", has_text="@fixture-human").click()  # unread mail, highlighted
    page.wait_text("flaky login test")
    assert page.page.evaluate(CONTRAST) == []
    page.page.keyboard.press("Escape")  # a chosen message, its buttons shown
    assert page.page.evaluate(CONTRAST) == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.page.screenshot(path=str(ARTIFACTS / f"web-mailbox-{scheme}.png"))
    page.page.keyboard.press("?")
    assert page.page.evaluate(CONTRAST) == []
