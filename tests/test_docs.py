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


def anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives a document's headings: lower case, punctuation but '-' and '_' dropped,
    spaces to '-', and a repeated one numbered (-1, -2, …). Lines inside a fenced block are not headings."""
    found: set[str] = set()
    fenced = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        heading = None if fenced else re.match(r"#{1,6} +(.*?)(?: +#+)? *$", line)
        if heading:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))  # a link shows its text
            slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
            n = 0
            while (f"{slug}-{n}" if n else slug) in found:
                n += 1
            found.add(f"{slug}-{n}" if n else slug)
    return found


def test_every_anchor_link_names_a_heading_there() -> None:
    """`file.md#anchor` (or `#anchor` within a page) in the README and docs/: a heading reworded leaves
    its old anchor behind, and GitHub then opens the page at its top, silently."""
    broken = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        for target, anchor in re.findall(r"\]\(((?:[^)#\s]*\.md)?)#([^)\s]+)\)", doc.read_text(encoding="utf-8")):
            page = (doc.parent / target).resolve() if target else doc
            if "://" not in target and page.is_file() and anchor not in anchors(page):
                broken.append(f"{doc.relative_to(REPO)}: {target}#{anchor}")
    assert not broken, "no such heading:\n" + "\n".join(broken)


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


def options_of() -> dict[str, set[str]]:
    """Each command's option flags, a group's subcommands' too."""
    ctx = click.Context(cli, info_name="attend")
    out: dict[str, set[str]] = {}
    for name in COMMANDS:
        cmd = cli.get_command(ctx, name)
        assert cmd is not None
        commands = [cmd, *(cmd.commands.values() if isinstance(cmd, click.Group) else ())]
        out[name] = {flag for c in commands for p in c.params for flag in p.opts if flag.startswith("--")}
    return out


def readme_says(pattern: str) -> set[str]:
    """The command names (in backticks) of the README's sentence that ``pattern`` finds."""
    said = re.search(pattern, " ".join((REPO / "README.md").read_text(encoding="utf-8").split()))
    assert said, f"README.md no longer says {pattern!r}"
    return set(re.findall(r"`([a-z]+)`", said.group(1)))


def test_the_readme_names_the_commands_that_take_utc() -> None:
    """`peers` showed times, but refused the --utc the README promised for times."""
    takes = {name for name, flags in options_of().items() if "--utc" in flags}
    assert readme_says(r"Times are local with the zone shown \(([^)]*) take `--utc` for UTC\)") == takes


def test_the_readme_names_the_commands_that_take_no_json() -> None:
    without = {name for name, flags in options_of().items() if "--json" not in flags}
    assert readme_says(r"Every verb except (.*?) takes `--json`") == without


def test_the_readmes_verb_table_names_every_command() -> None:
    table = re.search(r"^\| verb \| does \|\n(.*?)\n\n", (REPO / "README.md").read_text(encoding="utf-8"), re.M | re.S)
    assert table, "README.md has no verb table"
    named = {name for row in table.group(1).splitlines() for name in re.findall(r"`([a-z]+)", row.split(" | ")[0])}
    assert not set(COMMANDS) - named, f"add to README.md's verb table: {sorted(set(COMMANDS) - named)}"


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


# ---------------------------------------------------------------------- the architecture overview's module table

OVERVIEW = REPO / "docs" / "architecture" / "overview.md"
PACKAGE = REPO / "attend"


def package_modules() -> set[str]:
    """attend's own modules and subpackages, as the overview names them (`attend/x.py`, `attend/y/`)."""
    files = {f"attend/{p.name}" for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    folders = {f"attend/{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    return files | folders


def overview_rows() -> dict[str, int]:
    """The module table of docs/architecture/overview.md: each module with its layer number."""
    rows = re.findall(r"^\| (\d+) \| `(attend/[^`]+)` \|", OVERVIEW.read_text(encoding="utf-8"), re.M)
    assert rows, "docs/architecture/overview.md has no module table"
    table: dict[str, int] = {}
    for layer, module in rows:
        assert module not in table, f"{module} is listed twice"
        table[module] = int(layer)
    return table


def contract_layers() -> dict[str, int]:
    """The layers contract of pyproject.toml (the authority), lowest first: each module with its number."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in project["tool"]["importlinter"]["contracts"] if c["id"] == "layers")
    layers: dict[str, int] = {}
    for number, layer in enumerate(reversed(contract["layers"])):
        for dotted in layer.split("|"):
            path = "attend/" + dotted.strip().removeprefix("attend.")
            layers[path + ("/" if (REPO / path).is_dir() else ".py")] = number
    return layers


def top_level(module: str) -> str:
    """The module or subpackage of attend a row names: `attend/setup/<host>.py` is a part of `attend/setup/`."""
    parts = module.split("/")
    return module if len(parts) == 2 or parts[2] == "" else f"{parts[0]}/{parts[1]}/"


def test_the_overviews_module_table_lists_every_module_of_attend_and_no_other() -> None:
    listed, there = {top_level(m) for m in overview_rows()}, package_modules()
    assert not there - listed, f"add to docs/architecture/overview.md's table: {sorted(there - listed)}"
    assert not listed - there, f"gone from attend/, still in the overview's table: {sorted(listed - there)}"


def test_the_overviews_module_table_gives_each_module_the_layer_the_contract_gives_it() -> None:
    table, contract = overview_rows(), contract_layers()
    # A row for a part of a subpackage (each host's setup adapter) sits on its subpackage's layer.
    wrong = {m: (n, contract.get(top_level(m))) for m, n in table.items() if contract.get(top_level(m)) != n}
    assert not wrong, f"(overview, pyproject.toml) layers disagree: {wrong}"


README = REPO / "README.md"


def readme_layout() -> dict[str, str]:
    """The README's Layout block: each `attend/...` entry with the lines under it, indented or continued."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"^## Layout\n.*?^```\n(.*?)^```", text, re.M | re.S)
    assert block, "README.md has no Layout block"
    entries: dict[str, str] = {}
    current = ""
    for line in block.group(1).splitlines():
        if line.startswith("attend/"):
            current = line.split()[0]
            entries[current] = ""
        elif not line.startswith(" "):
            current = ""  # settings/, tests/ and the rest: not attend's
        if current:
            entries[current] += line + "\n"
    return entries


def test_the_readmes_layout_names_every_module_and_package_of_attend() -> None:
    """The Layout block went stale as packages were added (hosts/, relay/): each top-level module and
    package has an entry, and each package's modules are named in it, but those of the verbs and the
    CLI, which it describes as one per verb or command."""
    layout = readme_layout()
    there = package_modules()
    assert not there - set(layout), f"add to README.md's Layout: {sorted(there - set(layout))}"
    assert not set(layout) - there, f"gone from attend/, still in README.md's Layout: {sorted(set(layout) - there)}"
    unnamed = [
        f"{package}{part.name}"
        for package in sorted(there)
        if package.endswith("/") and package not in ("attend/verbs/", "attend/cli/")
        for part in sorted((REPO / package).iterdir())
        if (part.suffix == ".py" and part.name != "__init__.py") or (part / "__init__.py").is_file()
        if not re.search(rf"(?<![\w/]){re.escape(part.name)}(?:/|\b)", layout[package])
    ]
    assert not unnamed, f"name these in README.md's Layout, under their package: {unnamed}"


# ---------------------------------------------------------------------- the user guide's files and where they live

FILES_GUIDE = REPO / "docs" / "guide" / "files.md"


def guide_sections() -> dict[str, set[str]]:
    """docs/guide/files.md: each section's heading, with every code span under it (the heading's too)."""
    sections: dict[str, set[str]] = {}
    for part in re.split(r"^## ", FILES_GUIDE.read_text(encoding="utf-8"), flags=re.M)[1:]:
        heading = part.split("\n", 1)[0]
        sections[heading] = set(re.findall(r"`([^`\n]+)`", part))
    return sections


def shown(path: str, home: Path) -> str:
    """A path as a person reads it: the home folder as ``~``."""
    return "~" + path.removeprefix(str(home)) if path.startswith(str(home)) else path


def test_the_files_guide_names_each_user_file_where_the_code_puts_it(tmp_path: Path) -> None:
    from attend import layout
    from attend.domain.settings import config, scenes
    from attend.setup import install

    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    env = {"HOME": str(home)}
    settings = {  # each file of the user's, as the code names it
        "config": config.user_path(env),
        "scenes": scenes.path(env),
        "approvals": config.trust_path(env),
        "install's records": install.resolve_target(None, env).state_dir.parent,
    }
    sections = guide_sections()

    def section(folder: str) -> set[str]:
        named = [spans for heading, spans in sections.items() if f"`{folder}`" in heading]
        assert named, f"docs/guide/files.md has no section headed by `{folder}`"
        return named[0]

    for what, path in settings.items():
        folder = shown(str(path.parent), home) + "/"
        name = path.name + ("/" if what == "install's records" else "")
        assert name in section(folder), f"docs/guide/files.md names no `{name}` ({what}) under `{folder}`"
    spool = shown(layout.default_root(env), home)
    assert section(spool), spool
    overlay = config.project_file("<project>")
    assert section(overlay), overlay
    # Where the environment moves them, as the code reads it.
    moved = {"XDG_CONFIG_HOME": layout.config_root, "XDG_CACHE_HOME": layout.default_root}
    text = FILES_GUIDE.read_text(encoding="utf-8")
    for var, where in moved.items():
        said = where({"HOME": str(home), var: "/elsewhere"}).replace("/elsewhere", f"${var}")
        assert f"`{said}`" in text, f"docs/guide/files.md does not say `{said}`"
    assert "`$ATTEND_HOME`" in text and layout.default_root({"ATTEND_HOME": "/x", "HOME": str(home)}) == "/x"
