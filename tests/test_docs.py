"""The generated command reference is current, and every command has a description."""

from __future__ import annotations

import os
import re
import subprocess
import sys
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


DOCS_OUTSIDE = re.compile(
    r"DESIGN\.md|\bissues? \d+|\bshared/|reference/[a-z-]+\.md|\bthe seeds\b|\bseed's\b|\bADR[- ]?\d", re.I
)


def test_the_docs_stand_on_their_own() -> None:
    """The README and docs/ cite only what the repository holds: no design documents, tracker issues
    or folders a newcomer does not have."""
    docs = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    hits = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in docs
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if DOCS_OUTSIDE.search(line)
    ]
    assert not hits, "say it in the project's own words:\n" + "\n".join(hits)


def test_every_architecture_doc_link_resolves() -> None:
    for doc in sorted((REPO / "docs").rglob("*.md")):
        for target in re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            if "://" not in target:
                assert (doc.parent / target).resolve().is_file(), f"{doc.relative_to(REPO)} links to missing {target}"


def test_the_top_level_help_printed_without_click_is_current() -> None:
    from attend.cli import toplevel

    assert docs.top_help() == toplevel.HELP, "attend/cli/toplevel.py is stale; run: python -m attend.cli.docs --write"


def test_attend_help_lists_the_commands_without_importing_click_or_a_verb() -> None:
    """`attend --help` was the slowest thing a newcomer runs first: it imported every verb to list them."""
    probe = (
        "import sys\n"
        "from attend.cli.entry import main\n"
        "for argv in (['attend', '--help'], ['attend', '-h'], ['attend'], ['attend', 'help']):\n"
        "    sys.argv = argv\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as e:\n"
        "        assert e.code in (0, None), e.code\n"
        "loaded = sorted(m for m in sys.modules if m == 'click' or m.startswith(('attend.verbs', 'attend.domain')))\n"
        "print('LOADED', loaded, file=sys.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "100"}
    )
    assert out.returncode == 0, out.stderr
    assert "LOADED []" in out.stderr, out.stderr
    from attend.cli import toplevel

    assert out.stdout == (toplevel.HELP + "\n") * 4


GLOSSARY = REPO / "docs" / "guide" / "glossary.md"
TERMS = ("conduit", "drain", "waiter", "trailer", "reheat", "governor", "lane", "fold", "parked", "enrolled", "persona")


def test_the_readme_links_the_user_guide_and_its_glossary_defines_every_term() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "](docs/guide/README.md)" in readme and "](docs/guide/glossary.md)" in readme
    defined = set(re.findall(r"^\*\*([a-z -]+)\*\*", GLOSSARY.read_text(encoding="utf-8"), re.M))
    assert set(TERMS) <= defined, sorted(set(TERMS) - defined)
    for page in ("README.md", "daily.md", "files.md"):  # the guide's pages exist and are linked from its start
        assert (REPO / "docs" / "guide" / page).is_file()
        assert page == "README.md" or f"]({page})" in (REPO / "docs" / "guide" / "README.md").read_text()
