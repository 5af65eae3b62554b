"""The generated command reference is current, and every command has a description."""

from __future__ import annotations

import re
from pathlib import Path

import click

from attend.cli import docs
from attend.cli.app import COMMANDS, cli

REPO = Path(__file__).resolve().parent.parent


def test_the_generated_cli_reference_is_current() -> None:
    assert docs.DOC_PATH.read_text(encoding="utf-8") == docs.render(), (
        "docs/cli/attend.md is stale; run: python -m attend.cli.docs --write"
    )


def test_every_command_has_a_description() -> None:
    ctx = click.Context(cli, info_name="attend")
    for name in COMMANDS:
        cmd = cli.get_command(ctx, name)
        assert cmd is not None and (cmd.help or "").strip(), name


OUTSIDE = re.compile(r"DESIGN\.md|\bADR[- ]?\d|seed ADR|reference/[a-z-]+\.md")
SHIPPED = ("attend", "hooks", "settings", "skills")


def test_the_code_cites_only_the_repositorys_own_docs() -> None:
    """A newcomer has the repository, not the documents it grew from: a citation outside it is a dead end."""
    hits = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for top in SHIPPED
        for path in sorted((REPO / top).rglob("*"))
        if path.is_file() and path.suffix in (".py", ".sh", ".md", ".json")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not hits, "cite docs/architecture/ instead:\n" + "\n".join(hits)


def test_every_architecture_doc_link_resolves() -> None:
    for doc in sorted((REPO / "docs").rglob("*.md")):
        for target in re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            if "://" not in target:
                assert (doc.parent / target).resolve().is_file(), f"{doc.relative_to(REPO)} links to missing {target}"
