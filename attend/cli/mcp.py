"""CLI handlers for `attend mcp` (imports mcp only when it runs) and `attend notify …`."""

from __future__ import annotations

import click

from attend.cli.app import epilog
from attend.cli.common import context, emit, json_option, quiet_option, table
from attend.verbs import notify_list, notify_subscribe, notify_unsubscribe

MCP_EXAMPLES = (
    ("attend install", "registers attend mcp with Claude Code, which starts one per session"),
    ("attend mcp < requests.jsonl", "serve JSON-RPC lines on stdin, by hand"),
)
NOTIFY_EXAMPLES = (
    ("attend notify subscribe peer_started", "a trailer note when a peer starts"),
    ("attend notify list", "the subscriptions and their ids"),
    ("attend notify unsubscribe <subscription-id>", "stop one"),
)


@click.command(
    help="Serve attend's tools to an MCP client over stdio; Claude Code launches it once per session.",
    epilog=epilog(MCP_EXAMPLES),
)
def mcp() -> None:
    from attend.mcp import front  # answers discovery on the stdlib; the SDK (~0.8 s) loads behind it

    front.main()


@click.group(
    help="Standing subscriptions for the notifications on attend's MCP tool results.",
    epilog=epilog(NOTIFY_EXAMPLES),
)
def notify() -> None:
    pass


@notify.command(help=notify_subscribe.DESCRIPTION, epilog=epilog(notify_subscribe.EXAMPLES))
@click.argument("kinds", nargs=-1, required=True)
@click.option("--project", metavar="PATH", help=notify_subscribe.PARAMS["project"])
@json_option
@quiet_option
def subscribe(kinds: tuple[str, ...], project: str | None, as_json: bool) -> None:
    req = notify_subscribe.SubscribeRequest(kinds, project)
    emit(
        notify_subscribe.run(context(), req),
        as_json,
        lambda s: f"subscribed {s.subscription_id} to {', '.join(s.kinds)}" + (f" in {s.project}" if s.project else ""),
    )


@notify.command(help=notify_unsubscribe.DESCRIPTION, epilog=epilog(notify_unsubscribe.EXAMPLES))
@click.argument("subscription_id")
@json_option
@quiet_option
def unsubscribe(subscription_id: str, as_json: bool) -> None:
    req = notify_unsubscribe.UnsubscribeRequest(subscription_id)
    emit(notify_unsubscribe.run(context(), req), as_json, lambda u: f"unsubscribed {u.subscription_id}")


@notify.command(name="list", help=notify_list.DESCRIPTION, epilog=epilog(notify_list.EXAMPLES))
@json_option
def list_(as_json: bool) -> None:
    def text(result: notify_list.Subscriptions) -> str:
        if not result.subscriptions:
            return "no subscriptions"
        rows = [[s.subscription_id, ", ".join(s.kinds), s.project or "-", s.created_at] for s in result.subscriptions]
        return table(rows, ["Id", "Kinds", "Project", "Since"])

    emit(notify_list.run(context(), notify_list.ListRequest()), as_json, text)
