"""The generated command reference is current, and every command has a description."""

from __future__ import annotations

import click

from attend.cli import docs
from attend.cli.app import COMMANDS, cli


def test_the_generated_cli_reference_is_current() -> None:
    assert docs.DOC_PATH.read_text(encoding="utf-8") == docs.render(), (
        "docs/cli/attend.md is stale; run: python -m attend.cli.docs --write"
    )


def test_every_command_has_a_description() -> None:
    ctx = click.Context(cli, info_name="attend")
    for name in COMMANDS:
        cmd = cli.get_command(ctx, name)
        assert cmd is not None and (cmd.help or "").strip(), name
