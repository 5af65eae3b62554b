"""`attend completion bash|zsh|fish`, and the live candidates behind it: ``--to`` completes peer names,
humans' user names, channels and ``*``; ``--channel`` and channel arguments complete channel names; ``--re`` the newest
message ids. Completion runs on every Tab, so it reads a little and never fails loudly: any error
means no candidates (common.complete wraps each call), never a traceback in the user's prompt.
"""

from __future__ import annotations

from typing import Any

import click

from attend.cli.app import epilog

SHELLS = ("bash", "zsh", "fish")
RECENT_IDS = 20  # --re offers this many of the newest messages
EXAMPLES = (
    ('eval "$(attend completion bash)"', "in ~/.bashrc"),
    ('eval "$(attend completion zsh)"', "in ~/.zshrc, after compinit"),
    ("attend completion fish > ~/.config/fish/completions/attend.fish", "fish loads it from there"),
)


@click.command(
    help="Print the shell completion script for bash, zsh or fish; --to, --channel and --re complete "
    "live peer names and humans' user names, channels, and recent message ids.",
    epilog=epilog(EXAMPLES),
)
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    from click.shell_completion import get_completion_class

    from attend.cli.app import cli

    cls = get_completion_class(shell)
    assert cls is not None  # every name in SHELLS is one of click's own
    click.echo(cls(cli, {}, "attend", "_ATTEND_COMPLETE").source())


def candidates(kind: str, incomplete: str) -> list[Any]:
    """The CompletionItems for ``kind`` that start with ``incomplete`` (imports only on a Tab)."""
    from click.shell_completion import CompletionItem

    from attend.domain.messages import channels as channel_store
    from attend.domain.sessions.context import Context

    ctx = Context.default()

    def _channel_names(ctx: Context) -> list[str]:
        return channel_store.names(ctx.spool)

    if kind == "channel":
        bare = incomplete.lstrip("#")
        lead = incomplete[: len(incomplete) - len(bare)]
        return [CompletionItem(lead + n) for n in _channel_names(ctx) if n.startswith(bare)]
    if kind == "to":
        # A list is comma-separated: complete its last element, keep what came before.
        head, _, last = incomplete.rpartition(",")
        head = head + "," if head else ""
        from attend.verbs import peers

        items = [CompletionItem("*", help="everyone (#open)")]
        items += [CompletionItem("#" + n, help="channel") for n in _channel_names(ctx)]
        from attend.domain.sessions import humans

        found = peers.run(ctx, peers.PeersRequest())
        items += [CompletionItem(p.display, help=p.project) for p in found.peers if not p.self]
        # A session's earlier names still reach it (stable names); its current name comes first.
        items += [CompletionItem(n, help=f"now {p.display}") for p in found.peers if not p.self for n in p.earlier]
        # Humans by user name: every mailbox of this spool (not only the recent ones), and other hosts'.
        me = ctx.who().id
        items += [CompletionItem(u, help="human") for u in humans.known(ctx.spool) if u != me]
        items += [CompletionItem(f"{h.user}@{h.host}", help="human") for h in found.humans if h.host]
        return [CompletionItem(head + i.value, help=i.help) for i in items if str(i.value).startswith(last)]
    if kind == "id":
        from attend.verbs import inbox

        page = inbox.run(ctx, inbox.InboxRequest(limit=RECENT_IDS))
        return [
            CompletionItem(m.id, help=f"{m.sender}: {m.body.splitlines()[0][:60] if m.body else ''}")
            for m in page.messages
            if m.id.startswith(incomplete)
        ]
    return []
