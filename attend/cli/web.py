"""CLI handler for `attend web`: the seat is opened (every refusal one line, before anything listens),
then attend.web is imported, and with it starlette and uvicorn: nothing else on the CLI's paths pays for them."""

from __future__ import annotations

import click

from attend.cli.app import epilog
from attend.cli.common import context
from attend.verbs import web as web_verb


@click.command(help=web_verb.DESCRIPTION, epilog=epilog(web_verb.EXAMPLES))
@click.option(
    "--port", type=int, default=web_verb.DEFAULT_PORT, show_default=True, metavar="N", help=web_verb.PARAMS["port"]
)
@click.option("--open", "open_", is_flag=True, help=web_verb.PARAMS["open"])
def web(port: int, open_: bool) -> None:
    ctx = context()
    seat = web_verb.run(ctx, web_verb.WebRequest(port, open_))
    from attend.web.serve import serve  # the one import of the web server

    serve(ctx, seat)
