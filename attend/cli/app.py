"""The click frontend: parse, call one verb, render. Commands load lazily so `attend send` imports
only what sending needs. Errors map to exit codes here, in one place.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from attend.errors import AttendError

# command name -> "module:attribute"; each module holds a few thin handlers.
COMMANDS: dict[str, str] = {
    "send": "attend.cli.messaging:send",
    "reply": "attend.cli.messaging:reply",
    "inbox": "attend.cli.messaging:inbox",
    "peers": "attend.cli.messaging:peers",
    "status": "attend.cli.messaging:status",
    "whoami": "attend.cli.messaging:whoami",
    "join": "attend.cli.channels:join",
    "leave": "attend.cli.channels:leave",
    "channels": "attend.cli.channels:channels",
    "dissolve": "attend.cli.channels:dissolve",
    "scene": "attend.cli.channels:scene",
    "scenes": "attend.cli.channels:scenes",
    "config": "attend.cli.admin:config",
    "cleanup": "attend.cli.admin:cleanup",
    "tail": "attend.cli.admin:tail",
    "run": "attend.cli.conduits:run",
    "log": "attend.cli.conduits:log",
    "demo": "attend.cli.demo:demo",
    "install": "attend.cli.setup:install",
    "uninstall": "attend.cli.setup:uninstall",
    "permissions": "attend.cli.setup:permissions",
    "doctor": "attend.cli.setup:doctor",
    "mcp": "attend.cli.mcp:mcp",
    "notify": "attend.cli.mcp:notify",
}


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


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="attend", message="%(prog)s %(version)s")
def cli() -> None:
    """attend: messages between the Claude Code sessions on this machine, and the human beside them."""


def main(argv: list[str] | None = None) -> Any:
    try:
        rv = cli.main(args=argv, prog_name="attend", standalone_mode=False)
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
        click.echo(f"{where}: {e.format_message()} (see {where} --help)", err=True)
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("attend: aborted", err=True)
        sys.exit(1)
    except AttendError as e:
        click.echo(f"attend: {e}", err=True)
        sys.exit(e.exit_code)
    except BrokenPipeError:
        sys.exit(1)
