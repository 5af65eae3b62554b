"""Run the page's server: bind 127.0.0.1:<port> first (a port taken is one line and exit 1, before
anything is printed), print the address with its one-time token as the first line of stdout, open it
in the browser when asked, then serve until Ctrl+C or SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import socket
import sys
import threading

import uvicorn

from attend.domain.sessions.context import Context
from attend.errors import AttendError
from attend.verbs.web import WebSeat
from attend.web.server import Hub, build

TICK_SECONDS = 1.0  # uvicorn's housekeeping tick (its own is 0.1 s: ten wakes a second on an idle page)


class PortTaken(AttendError):
    exit_code = 1


class QuietServer(uvicorn.Server):
    """uvicorn's server with its housekeeping tick once a second: the Date header and the exit check
    need no more, and an idle page's server then sleeps. At shutdown the open event streams end
    first, so stopping waits on none of them."""

    def __init__(self, config: uvicorn.Config, hub: Hub) -> None:
        super().__init__(config)
        self.hub = hub

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.hub.end_streams()
        await super().shutdown(sockets)

    async def main_loop(self) -> None:
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 10) % 864000  # on_tick refreshes the Date header when counter % 10 == 0
            await asyncio.sleep(TICK_SECONDS)
            should_exit = await self.on_tick(counter)


def bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise PortTaken(f"port {port} on 127.0.0.1 is taken; --port N picks another, --port 0 a free one") from e
        raise PortTaken(f"cannot listen on 127.0.0.1:{port}: {e.strerror}") from e
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


def serve(ctx: Context, seat: WebSeat) -> None:
    sock = bind(seat.port)
    port = sock.getsockname()[1]
    page, hub, app = build(ctx, seat.user)
    url = f"http://127.0.0.1:{port}/?token={page.token}"
    sys.stdout.write(url + "\n")
    sys.stdout.write("attend web: the page is served on 127.0.0.1 only; Ctrl+C stops it\n")
    sys.stdout.flush()
    if seat.open:
        import webbrowser  # only --open pays for it

        threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        http="h11",
        ws="none",
        server_header=False,
        timeout_graceful_shutdown=2,
    )
    # uvicorn shuts down on Ctrl+C, then raises it again: stopping is what was asked, exit 0.
    with contextlib.suppress(KeyboardInterrupt):
        QuietServer(config, hub).run(sockets=[sock])
