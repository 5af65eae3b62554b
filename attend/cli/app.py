"""The click frontend: parse, call one verb, render. Commands load lazily so `attend send` imports
only what sending needs. Errors map to exit codes here, in one place.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from attend import __version__
from attend.errors import AttendError

EXAMPLES_HEADING = "Examples:"


def example_lines(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """The examples that end a command's help (EXAMPLES beside each verb's DESCRIPTION: 2-4
    (command line, what it does) pairs), one line each, the comments aligned."""
    width = max(len(command) for command, _ in pairs)
    return [f"{command.ljust(width)}  # {what}" for command, what in pairs]


def epilog(pairs: Sequence[tuple[str, str]]) -> str:
    """The same examples as click's epilog; docs/cli/attend.md shows them too (attend/cli/docs.py)."""
    # \b keeps click from re-wrapping the paragraph that follows it into one line.
    return EXAMPLES_HEADING + "\n\n\b\n" + "\n".join(example_lines(pairs))


# command name -> "module:attribute"; each module holds a few thin handlers.
COMMANDS: dict[str, str] = {
    "send": "attend.cli.messaging:send",
    "reply": "attend.cli.messaging:reply",
    "inbox": "attend.cli.inbox:inbox",
    "peers": "attend.cli.queries:peers",
    "status": "attend.cli.queries:status",
    "whoami": "attend.cli.whoami:whoami",
    "mute": "attend.cli.muting:mute",
    "unmute": "attend.cli.muting:unmute",
    "join": "attend.cli.channels:join",
    "leave": "attend.cli.channels:leave",
    "channels": "attend.cli.channels:channels",
    "dissolve": "attend.cli.channels:dissolve",
    "scene": "attend.cli.scenes:scene",
    "scenes": "attend.cli.scenes:scenes",
    "config": "attend.cli.admin:config",
    "cleanup": "attend.cli.admin:cleanup",
    "sensors": "attend.cli.senses:sensors",
    "keepwarm": "attend.cli.senses:keepwarm",
    "tune": "attend.cli.senses:tune",
    "tail": "attend.cli.admin:tail",
    "chat": "attend.cli.chat:chat",
    "run": "attend.cli.conduits:run",
    "log": "attend.cli.conduits:log",
    "relay": "attend.cli.relay:relay",
    "demo": "attend.cli.demo:demo",
    "install": "attend.cli.setup:install",
    "uninstall": "attend.cli.setup:uninstall",
    "permissions": "attend.cli.setup:permissions",
    "doctor": "attend.cli.setup:doctor",
    "mcp": "attend.cli.mcp:mcp",
    "notify": "attend.cli.mcp:notify",
    "recall": "attend.cli.hooks:recall",
    "wait": "attend.cli.hooks:wait",
    "help": "attend.cli.app:help_command",
    "completion": "attend.cli.completion:completion",
    "web": "attend.cli.web:web",
    # Leases on files (attend/leases).
    "lease": "attend.cli.leasing:lease",
    "release": "attend.cli.leasing:release",
    "leases": "attend.cli.leasing:leases",
    "inbound": "attend.cli.inbound:inbound",
    "thread": "attend.cli.thread:thread",
    "search": "attend.cli.search:search",
}


def suggest(name: str, known: list[str]) -> str:
    """The refusal of an unknown command: the closest name, when one is close (a typo)."""
    import difflib  # only a typo pays for it

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"no such command {name!r}; " + (f"did you mean {close[0]!r}?" if close else "attend --help lists them")


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        module = __import__(module_name, fromlist=[attr])
        command = getattr(module, attr)
        assert isinstance(command, click.Command)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0]
        if name not in COMMANDS and not name.startswith("-"):
            if ctx.resilient_parsing:
                # Tab completion parses resiliently: the words after an unknown command complete to
                # nothing, and no refusal is printed onto the user's prompt.
                return name, click.Command(name, add_help_option=False), args[1:]
            raise click.UsageError(suggest(name, sorted(COMMANDS)), ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
# The version the package carries: the distribution is attend-bus, and an editable install has no
# metadata under the command's name for click to find.
@click.version_option(version=__version__, message="%(prog)s %(version)s")
def cli() -> None:
    """attend: messages between the agent sessions on this machine (Claude Code, Codex CLI, Gemini CLI),
    and the human beside them."""


HELP_EXAMPLES = (
    ("attend help send", "the help of one command, as attend send --help prints it"),
    ("attend help notify subscribe", "a subcommand's"),
    ("attend help", "every command"),
)


@click.command(
    "help",
    help="Show the help of a command (attend help send), or of attend itself.",
    epilog=epilog(HELP_EXAMPLES),
)
@click.argument("words", nargs=-1, metavar="[COMMAND]...")
@click.pass_context
def help_command(ctx: click.Context, words: tuple[str, ...]) -> None:
    target = ctx.find_root()
    command: click.Command = target.command
    for word in words:
        if not isinstance(command, click.Group):
            raise click.UsageError(f"{target.command_path} has no subcommands; attend help {target.info_name}")
        found = command.get_command(target, word)
        if found is None:
            known = command.list_commands(target)
            raise click.UsageError(suggest(word, known) if command is cli else f"no such command {word!r}", ctx)
        target = click.Context(found, info_name=word, parent=target)
        command = found
    click.echo(target.get_help())


def main(argv: list[str] | None = None) -> Any:
    args = sys.argv[1:] if argv is None else argv

    def refuse(code: str, message: str, exit_code: int) -> None:
        from attend.cli import failure  # only a refusal pays for it

        failure.report(code, message, failure.wants_json(args), sys.stdout, sys.stderr)
        sys.exit(exit_code)

    try:
        rv = cli.main(args=args, prog_name="attend", standalone_mode=False)
        # Without standalone mode click returns ctx.exit()'s code instead of exiting.
        if isinstance(rv, int) and not isinstance(rv, bool):
            sys.exit(rv)
        return rv
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.exceptions.NoArgsIsHelpError as e:
        click.echo(e.ctx.get_help() if e.ctx else "attend --help")  # bare `attend`: the help, and no error
        sys.exit(0)
    except click.UsageError as e:
        # One line, like every other refusal: what is wrong, and where the help is.
        where = e.ctx.command_path if e.ctx else "attend"
        refuse("usage", f"{where}: {e.format_message()} (see {where} --help)", e.exit_code)
    except click.ClickException as e:
        refuse("failure", f"attend: {e.format_message()}", e.exit_code)
    except click.exceptions.Abort:
        refuse("aborted", "attend: aborted", 1)
    except AttendError as e:
        refuse(e.code, f"attend: {e}", e.exit_code)
    except BrokenPipeError:
        sys.exit(1)
