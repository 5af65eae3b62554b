"""`attend web`: the page's server. Starlette on uvicorn, on 127.0.0.1 only, one process, one human.

**The guard** (``Guard``, around every route, the static files too): a request whose Host is not
127.0.0.1 or localhost is refused (a DNS-rebound name cannot reach it); the first request carries the
one-time token of the printed address, which is exchanged once for an ``HttpOnly; SameSite=Strict``
cookie (a second use of the address is refused: a copy left in a history or a log opens nothing);
without the cookie every request is 401, with a wrong one 403; a write (POST) must also come from the
page's own origin (another port of 127.0.0.1 is the same site to a browser, so its pages carry the
cookie too, but not this origin). Every answer carries a strict Content-Security-Policy: only the page's own script
and style run, nothing loads from anywhere else, and the script shows every peer's text as text.

**What it serves** (``routes``, the one table of routes): the page, its script and style
(attend/web/static/, package data), the rooms with their unread counts, a room's messages in thread
order, the live peers, sending a line, marking mail read, who holds which files (the leases verb) and
the human's release of any of them (the release verb, asked for with ``confirmed``: the page asks the
human first), what sessions' inbound rules hold and the human's accept or decline of each (the inbound
verb), a search over everything (the search verb: each result's snippet in pieces, marked or not, so
the page builds the mark itself and never reads markup), and ``/events``: server-sent events, one per
message landing in any room the page shows, with the message's name (its id, which sorts in send
order) as the event id; the leases again whenever they change (attend/web/held.py says what wakes
that); what the inbound rules hold, when that changed.

**Live.** One feed (attend.seat.live, inotify) for the whole server hands each new record to every
open stream. A stream that reconnects sends ``Last-Event-ID``; it is given every record from
``LINK_BOUND`` before that name on (a record lands within that bound of its name's time, so one named
earlier may land later), and the page keeps each id once. The page's first stream passes the cursor
its first look returned (``after``) the same way, so nothing lands unseen between the look and the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import re
import secrets
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from attend import layout, safejson
from attend.domain.core import framing, rooms
from attend.domain.sessions import humans
from attend.domain.sessions.context import Context
from attend.errors import AttendError, NotFoundError
from attend.leases.store import live_holdings
from attend.seat import compose, threads
from attend.seat.live import Feed
from attend.verbs import chat as chat_verb
from attend.verbs import inbound as inbound_verb
from attend.verbs import leases as leases_verb
from attend.verbs import peers as peers_verb
from attend.verbs import release as release_verb
from attend.verbs import search as search_verb
from attend.verbs.inbox import Message
from attend.web.held import HeldWatch
from attend.web.waiting import WaitingWatch

STATIC = Path(__file__).resolve().parent / "static"
COOKIE = "attend_web"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-resource-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}
# Server-sent events are written by hand (a few lines): sse-starlette, which the SDK also brings, wakes
# twice a second per open stream to look for a shutdown, and an idle page's server should sleep.
RETRY_MS = 1000  # how soon a page whose stream broke asks again (the browser's EventSource does)
# The feed's look at every room when no event came (a missed event costs at most this long): the
# page's server idles longer between looks than chat does, as a tab is left open for hours.
RESCAN_SECONDS = 15.0
PING_SECONDS = 25  # a comment on an idle stream, so a connection that died unnoticed is found
MAX_BACKLOG = 1000  # records a reconnecting stream is given; more and the page reloads its room
MAX_BODY = 256 * 1024  # bytes of a request body (a message is capped lower by send itself)
MAX_IDS = 1000  # ids marked read in one request
PARENTS = 512  # parents of replies kept (a reply's "re" line names what it answers)
SEARCH_LIMIT = 30  # results a search on the page shows
MAX_QUERY = 1000  # characters of a query the page passes on (the verb bounds it too)
MARK = "**"  # how the search verb marks a match in its snippet
CURSOR_RE = re.compile(r"[0-9]{10}\.M[0-9]{6}")
LOOPBACK_RE = re.compile(r"(127\.0\.0\.1|localhost):[0-9]{1,5}")


def is_cursor(value: str) -> bool:
    """A record's name, or a time's name prefix (the page's first cursor)."""
    return bool(CURSOR_RE.fullmatch(value) or layout.NAME_RE.fullmatch(value))


class Page:
    """The server's state: the human's seat, the token and the cookie, and what the routes read."""

    def __init__(self, ctx: Context, user: str) -> None:
        self.ctx = ctx
        self.spool = ctx.spool
        self.user = user
        self.mailbox = rooms.human_room(user)
        self.token = secrets.token_urlsafe(32)  # in the printed address; exchanged once
        self.session = secrets.token_urlsafe(32)  # the cookie's value
        self.exchanged = False
        self.parents: dict[str, dict[str, str] | None] = {}
        self.lock = threading.Lock()

    # ------------------------------------------------------------------ what the page is given

    def room_doc(self, room: chat_verb.Room) -> dict[str, Any]:
        return {
            "room": room.room,
            "label": framing.inline(room.label),
            "kind": room.kind,
            "unread": room.unread,
            "detail": framing.inline(room.detail),
            "to": room.to is not None,
        }

    def listed(self) -> list[chat_verb.Room]:
        return chat_verb.rooms_of(self.spool, self.user)

    def unread(self) -> set[str]:
        return set(chat_verb.mailbox_unread(self.spool, self.user))

    def parent(self, msg_id: str, near: dict[str, Message]) -> dict[str, str] | None:
        """What a reply's parent says, briefly: from the room loaded, else found once in any room."""
        if msg_id in near:
            return self.snippet(near[msg_id])
        with self.lock:
            if msg_id in self.parents:
                return self.parents[msg_id]
        found = chat_verb.find(self.spool, msg_id)
        doc = self.snippet(found) if found is not None else None
        with self.lock:
            if len(self.parents) >= PARENTS:
                self.parents.clear()
            self.parents[msg_id] = doc
        return doc

    @staticmethod
    def snippet(m: Message) -> dict[str, str]:
        return {"id": m.id, "sender": framing.label(m.sender), "text": framing.inline(m.body[:200])[:120]}

    def message(self, m: Message, unread: set[str], near: dict[str, Message] | None = None) -> dict[str, Any]:
        """One message as the page shows it. Every string is framing's: controls, bidi overrides and
        zero-width characters escaped visibly, so a body cannot reorder or hide what is shown."""
        host = m.from_id.rsplit("@", 1)[1] if "@" in m.from_id else None  # a relayed sender: name@host
        return {
            "id": m.id,
            "t": round(layout.name_time(m.id) * 1000),
            "room": m.room,
            "panes": chat_verb.panes_for(m, self.user),
            "sender": framing.label(m.sender),
            "kind": m.from_kind,
            "client": framing.label(m.client) if m.client else None,
            "host": framing.label(host) if host else None,
            "mine": m.from_id == self.user,
            "re": m.re,
            "parent": self.parent(m.re, near or {}) if m.re else None,
            "body": "\n".join(line.replace("\t", "    ") for line in framing.trimmed(m.body)),
            "mail": m.room == self.mailbox and m.from_id != self.user,
            "unread": m.room == self.mailbox and m.id in unread,
        }

    def state(self) -> dict[str, Any]:
        cursor = layout.cutoff_name(layout.name_time(layout.unique_name()))
        found = self.window(cursor)
        return {
            "user": framing.label(self.user),
            "mailbox": self.mailbox,
            "cursor": cursor,
            # What the first stream gives again (the LINK_BOUND before the cursor): the page has it already.
            "known": [name for name, _ in found or [] if name < cursor],
            "rooms": [self.room_doc(r) for r in self.listed()],
            "unread": len(self.unread()),
        }

    def room(self, name: str) -> dict[str, Any] | None:
        found = next((r for r in self.listed() if r.room == name), None)
        if found is None:
            return None
        msgs = chat_verb.messages(self.spool, found, self.user)
        near = {m.id: m for m in msgs}
        unread = self.unread()
        out = []
        for row in threads.thread_order(msgs, set()):
            doc = self.message(row.msg, unread, near)
            doc["depth"] = row.depth
            out.append(doc)
        return {"room": self.room_doc(found), "messages": out}

    def peers(self) -> dict[str, Any]:
        found = peers_verb.run(self.ctx, peers_verb.PeersRequest())
        out = [
            {
                "name": framing.label(p.display),
                "status": p.status,
                "client": framing.label(p.client),
                "project": framing.label(p.project.rstrip("/").rsplit("/", 1)[-1] or "/"),
                "channels": [framing.inline(c) for c in p.channels],
                "host": framing.label(p.host) if p.host else None,
            }
            for p in found.peers
        ]
        people = [
            {"name": framing.label(h.user), "host": framing.label(h.host) if h.host else None}
            for h in found.humans
            if not h.self
        ]
        return {"peers": out, "humans": people}

    def window(self, after: str) -> list[tuple[str, str]] | None:
        """(name, room) of every record from LINK_BOUND before ``after`` on, but ``after`` itself;
        None when there are more than MAX_BACKLOG."""
        cut = layout.cutoff_name(layout.name_time(after) - layout.LINK_BOUND)
        found: list[tuple[str, str]] = []
        for room in chat_verb.watched_rooms(self.spool):
            found += [(n, room) for n in self.spool.room_names(room) if n >= cut and n != after]
            if len(found) > MAX_BACKLOG:
                return None
        return sorted(found)

    def complete(self, word: str) -> dict[str, list[str]]:
        """What a ``@na``/``#ch`` word completes to, as chat's Tab completes it: live peers and humans,
        or channels."""
        if word[:1] not in ("@", "#"):
            return {"options": []}
        found = peers_verb.run(self.ctx, peers_verb.PeersRequest())
        names = sorted({p.display for p in found.peers} | set(humans.known(self.spool)) - {self.user})
        channels = [r.label[1:] for r in self.listed() if r.kind == "channel"]
        return {"options": threads.completions(word, names, channels)}

    def since(self, after: str) -> list[dict[str, Any]] | None:
        """The records a stream resuming after ``after`` is given, oldest first (see the module's
        docstring); None when there are more than MAX_BACKLOG (the page reloads instead)."""
        found = self.window(after)
        if found is None:
            return None
        unread = self.unread()
        out = []
        for name, room in found:
            m = chat_verb.read(self.spool, room, name)
            if m is not None:
                out.append(self.message(m, unread))
        return out

    def send(self, text: str, room: str, re_id: str | None) -> dict[str, Any]:
        here = next((r for r in self.listed() if r.room == room), None)
        if here is None:
            raise compose.Nowhere(f"no room {room!r} here")
        sent = compose.send_line(self.ctx, text, here.to, re_id)
        where = framing.inline(sent.scope if sent.scope != "direct" else sent.to_name or sent.to)
        n = sent.delivered
        said = f"sent to {where}: {n} recipient{'s' if n != 1 else ''} ({sent.live} live)"
        return {"id": sent.id, "room": sent.room, "said": said, "warnings": [framing.inline(w) for w in sent.warnings]}

    def mark_read(self, ids: set[str]) -> dict[str, int]:
        marked = chat_verb.mark_read(self.spool, self.user, ids)
        return {"marked": marked, "unread": len(self.unread())}

    # ------------------------------------------------------------------ who holds which files

    def leases(self) -> dict[str, Any]:
        """Every live lease as the page shows it: each string framing's, as a message's are. Another
        host's (``remote``) is shown, not released here: its holder lives on that host."""
        found = leases_verb.run(self.ctx, leases_verb.LeasesRequest())
        here = layout.host()
        return {
            "leases": [
                {
                    "holder": framing.label(x.holder),
                    "session": x.session,
                    "client": framing.label(x.client) if x.client else None,
                    "glob": framing.inline(x.glob),
                    "root": framing.inline(x.root),
                    "project": framing.inline(x.root.rstrip("/").rsplit("/", 1)[-1] or "/") if x.root else None,
                    "reason": framing.inline(x.reason),
                    "shared": x.shared,
                    "since": x.since,
                    "until": x.until,
                    "host": framing.label(x.host),
                    "repo": framing.inline(x.repo) if x.repo else None,
                    "remote": x.host != here or x.repo is not None,
                }
                for x in found.leases
            ]
        }

    def held(self) -> tuple[dict[str, Any], set[int], bool]:
        """The leases (as the page shows them); the processes of the local holders, so the page is told
        as soon as one ends; and whether to look again on a timer (attend/web/held.py): for a holder
        with no process of its own, or a relay's mirror of other hosts' leases."""
        holdings = live_holdings(self.spool)
        pids = {h.pid for h in holdings if h.pid is not None and h.start is not None}
        slow = any(h.pid is None or h.start is None for h in holdings) or self.spool.exists(layout.RELAY)
        return self.leases(), pids, slow

    def release(self, session: str, glob: str | None) -> dict[str, Any]:
        """The human releases one lease of a session (``glob``), or all of them, once the page asked and
        the human said yes: the release verb, as `attend release --holder` runs it once the human
        typed yes at a terminal."""
        here = layout.host()
        held = [
            x
            for x in leases_verb.run(self.ctx, leases_verb.LeasesRequest()).leases
            if x.session == session and x.host == here and x.repo is None
        ]
        if not held:
            raise NotFoundError("that session holds no lease here now (it ended, or released it)")
        cwd = self.ctx.cwd
        globs: tuple[str, ...] = ()
        if glob is not None:
            lease = next((x for x in held if x.glob == glob), None)
            if lease is None:
                raise NotFoundError(f"that session holds no lease on {framing.inline(glob)[:200]} now")
            cwd, globs = lease.root, (glob,)  # the glob is relative to its own project's root: released there
        # A context of its own for each release: the human confirmed this one on the page (the route
        # asks for it), so no terminal is asked, and the confirmation holds for nothing else.
        ctx = Context(spool=self.spool, env=self.ctx.env, cwd=cwd, pid=self.ctx.pid)
        ctx.confirmed(release_verb.HUMAN_ACTION)
        out = release_verb.run(ctx, release_verb.ReleaseRequest(globs, holder=session))
        n = len(out.released)
        said = f"released {n} lease{'s' if n != 1 else ''} of {framing.label(out.holder)}"
        if out.released:
            said += ": " + ", ".join(framing.inline(x.glob) for x in out.released)
        kept = [framing.inline(f"{x.glob}: {x.why}") for x in out.not_released]
        return {"said": said, "released": n, "not_released": kept}

    # ------------------------------------------------------------------ what inbound rules hold

    def inbound(self) -> dict[str, Any]:
        """What waits for each session (its inbound rule holds it), oldest first, as the page shows it."""
        found = inbound_verb.run(self.ctx, inbound_verb.InboundRequest())
        return {"waiting": [self.waiting_doc(w) for w in found.waiting]}

    @staticmethod
    def waiting_doc(w: inbound_verb.Held) -> dict[str, Any]:
        return {
            "id": w.id,
            "session": w.session,
            "for": framing.label(w.session_name),
            "sender": framing.label(w.sender),
            "class": w.sender_class,
            "t": round(layout.name_time(w.id) * 1000),
            "subject": framing.inline(w.subject),
            "unreviewed": w.unreviewed,
        }

    def decide(self, msg_id: str, action: str) -> dict[str, Any]:
        """Accept (its session's next conduit shows it, once) or decline (the sender's receipt says so)."""
        found = inbound_verb.run(self.ctx, inbound_verb.InboundRequest(action, msg_id))
        done = "accepted" if action == "accept" else "declined"
        said = f"{done} {msg_id}" if found.decided else f"{msg_id} was decided already"
        return {"said": said, "decided": found.decided, "waiting": [self.waiting_doc(w) for w in found.waiting]}

    # ------------------------------------------------------------------ search

    def search(self, text: str) -> dict[str, Any]:
        """The search verb, as the human (everything in the spool): each result with the page's room
        it opens in, and its snippet as pieces ``[text, marked]``."""
        found = search_verb.run(self.ctx, search_verb.SearchRequest(text, limit=SEARCH_LIMIT))
        listed = {r.room: r for r in self.listed()}
        out = []
        for h in found.results:
            m = chat_verb.read(self.spool, h.room, h.id)
            pane = next((p for p in chat_verb.panes_for(m, self.user) if p in listed), None) if m else None
            out.append(
                {
                    "id": h.id,
                    "t": round(layout.name_time(h.id) * 1000),
                    "pane": pane,
                    "room": framing.inline(listed[pane].label) if pane else framing.label(h.room),
                    "sender": framing.label(h.sender),
                    "snippet": self.pieces(h.snippet, m.body if m else "", text),
                }
            )
        return {
            "results": out,
            "notes": [framing.inline(n) for n in found.notes],
            "warnings": [framing.inline(w) for w in found.warnings],
        }

    @staticmethod
    def pieces(snippet: str, body: str, text: str) -> list[tuple[str, bool]]:
        """The verb's snippet split at its marks (a snippet is one printable line: the verb turns controls
        and bidi overrides into spaces). A body that holds the mark itself would split in the wrong
        places: its snippet is made again with each ``*`` of the body stood in for, then put back."""
        if MARK in body:
            from attend.search import snippet as snip
            from attend.verbs import search_core

            stand_in = "\u2217"  # ∗, never in the mark
            try:
                terms = search_core.read_query(text).terms()
            except AttendError:
                terms = []
            snippet = snip.make(body.replace("*", stand_in), terms)
            parts = snippet.split(MARK)
            return [(p.replace(stand_in, "*"), i % 2 == 1) for i, p in enumerate(parts) if p]
        parts = snippet.split(MARK)
        if len(parts) % 2 == 0:  # unbalanced: shown unmarked rather than marked wrong
            return [(snippet, False)]
        return [(p, i % 2 == 1) for i, p in enumerate(parts) if p]


# ---------------------------------------------------------------------- live


class Hub:
    """The one feed, fanned out to each open stream's queue on the server's event loop."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.queues: set[asyncio.Queue[tuple[str, Any]]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.feed: Feed | None = None
        self.held: HeldWatch | None = None
        self.waits: WaitingWatch | None = None
        self.waiting: Any = None  # the inbound list last sent to the pages
        self.count: int | None = None  # the human's unread mail last sent to the pages

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.feed = Feed(
            self.page.spool,
            on_messages=self._messages,
            on_presence=lambda: self._post("peers", {}),
            on_rooms=lambda: self._post("rooms", {}),
            rescan=RESCAN_SECONDS,
        )
        self.feed.start()
        self.held = HeldWatch(self.page.spool, self.page.held, lambda doc: self._post("leases", doc))
        self.held.start()
        self.waits = WaitingWatch(self.page.spool, self.page.user, self.waiting_changed, rescan=RESCAN_SECONDS)
        self.waits.start()

    def stop(self) -> None:
        if self.feed is not None:
            self.feed.stop()
            self.feed = None
        if self.held is not None:
            self.held.stop()
            self.held = None
        if self.waits is not None:
            self.waits.stop()
            self.waits = None

    def _messages(self, batch: list[Message]) -> None:
        """On the feed's thread: the spool is read here (parents, the unread flags), off the loop. Mail
        to the human that just landed is unread, though the send may not have linked it into the
        mailbox's new/ yet (the room's record lands first, and wakes the feed); the count in the title
        is the waiting watch's, which wakes on the link itself."""
        page = self.page
        unread = page.unread() | {m.id for m in batch if m.room == page.mailbox and m.from_id != page.user}
        for m in batch:
            self._post("message", self.page.message(m, unread))

    def waiting_changed(self) -> None:
        """On the waiting watch's thread: the human's unread count and what the inbound rules hold,
        each sent when it changed (a stream that opens is given both as it starts)."""
        count = len(self.page.unread())
        if count != self.count:
            self.count = count
            self._post("count", {"count": count})
        try:
            doc = self.page.inbound()
        except AttendError:
            return
        if doc != self.waiting:
            self.waiting = doc
            self._post("inbound", doc)

    def _post(self, kind: str, data: Any) -> None:
        if self.loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the server is stopping
                self.loop.call_soon_threadsafe(self._fan, kind, data)

    def _fan(self, kind: str, data: Any) -> None:
        for q in list(self.queues):
            if q.qsize() > MAX_BACKLOG:  # a page that stopped reading: it is told to reload, once
                q.put_nowait(("reset", {}))
                self.queues.discard(q)
                continue
            q.put_nowait((kind, data))

    def end_streams(self) -> None:
        """On the event loop, as the server stops: every open stream ends (the page says so)."""
        for q in list(self.queues):
            q.put_nowait(("end", None))

    def subscribe(self) -> asyncio.Queue[tuple[str, Any]]:
        q: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.queues.add(q)
        return q


# ---------------------------------------------------------------------- routes


def event(kind: str, data: Any, event_id: str | None = None) -> bytes:
    """One server-sent event. The data is one line of JSON (json.dumps escapes every line break), and
    an id is a record's name: neither can hold a line break that would end a field early."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


def json_error(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def body_json(request: Request) -> dict[str, Any] | None:
    chunks, size = [], 0
    async for chunk in request.stream():  # read up to the bound, never the whole of a huge body
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    try:
        doc = safejson.loads(b"".join(chunks))
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def routes(page: Page, hub: Hub) -> list[Route]:
    def static(name: str, media: str) -> Callable[[Request], Awaitable[Response]]:
        async def serve(_: Request) -> Response:
            return FileResponse(STATIC / name, media_type=media)

        return serve

    async def state(_: Request) -> Response:
        return JSONResponse(await run_in_threadpool(page.state))

    async def room(request: Request) -> Response:
        name = request.query_params.get("room", "")
        doc = await run_in_threadpool(page.room, name) if len(name) <= 256 else None
        return JSONResponse(doc) if doc is not None else json_error(f"no room {name[:80]!r} here", 404)

    async def peers(_: Request) -> Response:
        try:
            return JSONResponse(await run_in_threadpool(page.peers))
        except AttendError as e:
            return json_error(framing.inline(str(e)), 500)

    async def complete(request: Request) -> Response:
        word = request.query_params.get("word", "")[:128]
        try:
            return JSONResponse(await run_in_threadpool(page.complete, word))
        except AttendError as e:
            return json_error(framing.inline(str(e)), 500)

    async def send(request: Request) -> Response:
        doc = await body_json(request)
        if doc is None:
            return json_error("not a JSON object, or too large")
        text, room, re_id = doc.get("text"), doc.get("room"), doc.get("re")
        if not isinstance(text, str) or not isinstance(room, str) or not (re_id is None or isinstance(re_id, str)):
            return json_error("text and room are strings; re is a message id or null")
        if not text.strip():
            return json_error("nothing to send")
        try:
            return JSONResponse(await run_in_threadpool(page.send, text, room, re_id))
        except AttendError as e:
            return json_error(framing.inline(str(e)))

    async def read(request: Request) -> Response:
        doc = await body_json(request)
        ids = doc.get("ids") if doc is not None else None
        if not isinstance(ids, list) or len(ids) > MAX_IDS:
            return json_error(f"ids is a list of at most {MAX_IDS} message ids")
        if not all(isinstance(i, str) and layout.NAME_RE.fullmatch(i) for i in ids):
            return json_error("ids holds message ids only")
        return JSONResponse(await run_in_threadpool(page.mark_read, set(ids)))

    async def leases(_: Request) -> Response:
        try:
            return JSONResponse(await run_in_threadpool(page.leases))
        except AttendError as e:
            return json_error(framing.inline(str(e)), 500)

    async def release(request: Request) -> Response:
        doc = await body_json(request)
        if doc is None:
            return json_error("not a JSON object, or too large")
        session, glob = doc.get("session"), doc.get("glob")
        if not isinstance(session, str) or not layout.is_session_id(session):
            return json_error("session is the holder's session id")
        if not (glob is None or (isinstance(glob, str) and 0 < len(glob) <= 4096)):
            return json_error("glob is one lease's glob, or null for all of the session's")
        if doc.get("confirmed") is not True:  # the page asks the human first; nothing else releases
            return json_error("releasing another session's lease is confirmed by the human first")
        try:
            return JSONResponse(await run_in_threadpool(page.release, session, glob))
        except AttendError as e:
            return json_error(framing.inline(str(e)), 404 if isinstance(e, NotFoundError) else 400)

    async def inbound(_: Request) -> Response:
        try:
            return JSONResponse(await run_in_threadpool(page.inbound))
        except AttendError as e:
            return json_error(framing.inline(str(e)), 500)

    async def decide(request: Request) -> Response:
        doc = await body_json(request)
        if doc is None:
            return json_error("not a JSON object, or too large")
        msg_id, action = doc.get("id"), doc.get("action")
        if not isinstance(msg_id, str) or not layout.NAME_RE.fullmatch(msg_id):
            return json_error("id is a held message's id")
        if action not in ("accept", "decline"):
            return json_error("action is accept or decline")
        try:
            return JSONResponse(await run_in_threadpool(page.decide, msg_id, action))
        except AttendError as e:
            return json_error(framing.inline(str(e)), 404 if isinstance(e, NotFoundError) else 400)

    async def search(request: Request) -> Response:
        text = request.query_params.get("q", "")
        if not text.strip():
            return json_error("type what to search for")
        if len(text) > MAX_QUERY:
            return json_error(f"a search is at most {MAX_QUERY} characters")
        try:
            return JSONResponse(await run_in_threadpool(page.search, text))
        except AttendError as e:
            return json_error(framing.inline(str(e)))

    async def events(request: Request) -> Response:
        after = request.headers.get("last-event-id") or request.query_params.get("after", "")
        if after and not is_cursor(after):
            return json_error("Last-Event-ID (or after) is not a message id")
        queue = hub.subscribe()

        async def stream() -> AsyncIterator[bytes]:
            try:
                yield f"retry: {RETRY_MS}\n: attend\n\n".encode()
                given: set[str] = set()
                if after:
                    backlog = await run_in_threadpool(page.since, after)
                    if backlog is None:  # too much to give again: the page reloads
                        yield event("reset", {})
                        return
                    for doc in backlog:
                        given.add(doc["id"])
                        yield event("message", doc, doc["id"])
                count = await run_in_threadpool(lambda: len(page.unread()))
                yield event("count", {"count": count})
                while True:
                    try:
                        kind, data = await asyncio.wait_for(queue.get(), PING_SECONDS)
                    except TimeoutError:
                        yield b": ping\n\n"  # a connection that died unnoticed fails on this write
                        continue
                    if kind == "end":
                        return
                    if kind == "message":
                        if data["id"] not in given:  # else the backlog had it (it landed while that was read)
                            yield event(kind, data, data["id"])
                        continue
                    yield event(kind, data)
                    if kind == "reset":
                        return
            finally:
                hub.queues.discard(queue)

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"x-accel-buffering": "no"})

    # The one table of routes.
    return [
        Route("/", static("index.html", "text/html; charset=utf-8")),
        Route("/app.js", static("app.js", "text/javascript; charset=utf-8")),
        Route("/app.css", static("app.css", "text/css; charset=utf-8")),
        Route("/favicon.svg", static("favicon.svg", "image/svg+xml")),
        Route("/api/state", state),
        Route("/api/room", room),
        Route("/api/peers", peers),
        Route("/api/complete", complete),
        Route("/api/send", send, methods=["POST"]),
        Route("/api/read", read, methods=["POST"]),
        Route("/api/leases", leases),
        Route("/api/release", release, methods=["POST"]),
        Route("/api/inbound", inbound),
        Route("/api/inbound", decide, methods=["POST"]),
        Route("/api/search", search),
        Route("/events", events),
    ]


# ---------------------------------------------------------------------- the guard

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGI = Callable[[Scope, Receive, Send], Awaitable[None]]


class Guard:
    """Around the whole app: the Host check, the token's one exchange, the cookie, the origin of a
    write, and the security headers on every answer (a refusal's too)."""

    def __init__(self, app: ASGI, page: Page) -> None:
        self.app = app
        self.page = page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)

        async def secured(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = message.setdefault("headers", [])
                have = {k.lower() for k, _ in headers}
                for k, v in HEADERS.items():
                    if k.encode() not in have:
                        headers.append((k.encode(), v.encode()))
                if b"cache-control" not in have:
                    headers.append((b"cache-control", b"no-store"))
            await send(message)

        refusal = self.refusal(request)
        if isinstance(refusal, Response):
            await refusal(scope, receive, secured)
            return
        await self.app(scope, receive, secured)

    def refusal(self, request: Request) -> Response | None:
        page = self.page
        host = request.headers.get("host", "")
        if not LOOPBACK_RE.fullmatch(host):  # a name rebound to 127.0.0.1 (DNS rebinding) is not this page
            return Response("attend web answers only at 127.0.0.1\n", 403, media_type="text/plain")
        cookie = request.cookies.get(COOKIE, "")
        good = bool(cookie) and hmac.compare_digest(cookie.encode(), page.session.encode())
        token = request.query_params.get("token")
        if request.url.path == "/" and token is not None and request.method == "GET":
            if good:
                return see_page()
            if page.exchanged or not hmac.compare_digest(token.encode(), page.token.encode()):
                return Response(
                    "this address was used already, or is not this server's: stop attend web and start it "
                    "again for a new one\n",
                    403,
                    media_type="text/plain",
                )
            page.exchanged = True
            answer = see_page()
            answer.set_cookie(COOKIE, page.session, httponly=True, samesite="strict", path="/")
            return answer
        if not cookie:
            return Response("open the address attend web printed\n", 401, media_type="text/plain")
        if not good:
            return Response("not this server's cookie: open the address attend web printed\n", 403)
        # A write comes from the page itself: another port of 127.0.0.1 is the same site, so the cookie
        # goes along, but it is another origin.
        if request.method not in ("GET", "HEAD") and request.headers.get("origin", "") != "http://" + host:
            return Response("a write comes from the page itself\n", 403, media_type="text/plain")
        return None


def see_page() -> Response:
    return Response(status_code=303, headers={"location": "/"})


# ---------------------------------------------------------------------- the app


def build(ctx: Context, user: str) -> tuple[Page, Hub, ASGI]:
    page = Page(ctx, user)
    hub = Hub(page)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        hub.start(asyncio.get_running_loop())
        try:
            yield
        finally:
            hub.stop()

    app = Starlette(routes=routes(page, hub), lifespan=lifespan)
    return page, hub, Guard(app, page)
