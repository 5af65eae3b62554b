"""The README's promises, run as written: its quick start in a clean HOME, from a copy of this
checkout, with no virtual environment on PATH, ends with `attend peers` answering."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"


def quick_start() -> str:
    """The first shell block under the README's "Quick start" heading."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found, "the README's quick start has no ```sh block"
    return found.group(1)


def test_the_quick_start_ends_with_attend_on_path() -> None:
    lines = [line for line in quick_start().splitlines() if line.strip()]
    assert lines[0].startswith("python3 -m venv .venv")
    assert lines[-1].strip() == "attend peers"  # bare: the venv's attend is on PATH by then


def test_the_readme_names_what_a_fresh_debian_or_ubuntu_needs() -> None:
    text = " ".join(README.read_text(encoding="utf-8").split("## Quick start", 1)[1].split("\n## ", 1)[0].split())
    assert "python3-venv" in text  # `python3 -m venv` fails without it on Debian and Ubuntu
    assert "Ubuntu 22.04" in text and "python3.11" in text  # whose python3 is 3.10


def test_the_readme_asks_for_no_more_node_than_the_suite_runs_on_and_says_how_to_get_it() -> None:
    """The need stated is what CI proves (the node this suite runs its e2e tests with), not the higher
    floor two pinned packages declare; and Debian 12, whose apt has Node 18, is told where to get it."""
    text = README.read_text(encoding="utf-8")
    said = re.search(r"Node ≥ (\d+)\.(\d+)", text)
    assert said, "the README names no Node version"
    node = shutil.which("node")
    assert node, "node not installed: the e2e tests need it"
    ran = re.match(r"v(\d+)\.(\d+)", subprocess.run([node, "--version"], capture_output=True, text=True).stdout)
    assert ran
    assert (int(said[1]), int(said[2])) <= (int(ran[1]), int(ran[2])), f"CI runs Node {ran[0]}"
    lock = json.loads((REPO / "tests" / "e2e" / "package-lock.json").read_text(encoding="utf-8"))
    declared = {lock["packages"][f"node_modules/{n}"]["engines"]["node"] for n in CLAIMED_ENGINES}
    assert declared == {">=22.0.0", ">=22.19.0"}, declared  # what the README says they declare
    quick = " ".join(text.split("## Quick start", 1)[1].split("\n## ", 1)[0].split())
    assert "declare 22 and 22.19" in quick and "EBADENGINE" in quick
    assert "Debian 12" in quick and "https://nodejs.org/dist/" in quick


CLAIMED_ENGINES = ("@anthropic-ai/claude-code", "@modelcontextprotocol/inspector")


def readme_test_commands() -> list[str]:
    """The README's shell block of test commands (the one after "The tests"), line by line."""
    section = README.read_text(encoding="utf-8").split("The tests (", 1)[1]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found
    return [line for line in found.group(1).splitlines() if line.strip()]


def test_the_readmes_apt_line_runs_as_written_as_root_where_there_is_no_sudo(tmp_path: Path) -> None:
    """CI and containers run as root without sudo: the line, literally, must still reach apt-get."""
    (line,) = [line for line in readme_test_commands() if "apt-get install" in line]
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    record = tmp_path / "apt-args"
    stub = bin_ / "apt-get"
    stub.write_text(f'#!/bin/sh\necho "$@" > {record}\n')
    stub.chmod(0o755)
    run = subprocess.run(["/bin/bash", "-c", line], env={"PATH": str(bin_)}, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert record.read_text().split() == ["install", "mutt", "tmux", "nats-server", "chromium"]


def test_ci_installs_with_the_pip_the_venv_brings_as_the_readme_does() -> None:
    """.ci/run runs the README's pip line and no other (an upgraded pip hid a launcher that imports re)."""
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    pips = [line for line in ci if "/pip " in line]
    assert pips == [".venv/bin/pip install -q -e '.[dev]'"], pips
    assert ".venv/bin/pip install -e '.[dev]'" in quick_start()


def test_the_installed_attend_is_the_script_attend_ships() -> None:
    """Not a launcher generated from an entry point, whose text depends on the pip that wrote it."""
    from tests.support import ATTEND

    shipped = (REPO / "scripts" / "attend").read_text(encoding="utf-8")
    installed = Path(ATTEND).read_text(encoding="utf-8")
    assert installed.split("\n", 1)[1] == shipped.split("\n", 1)[1]
    assert not re.search(r"^import re\b|^from re\b", shipped, re.M)


@pytest.mark.slow
def test_the_readme_quick_start_runs_in_a_clean_home_and_attend_peers_answers(tmp_path: Path) -> None:
    clone = tmp_path / "attend"
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        src = REPO / name
        if src.is_file() and not src.is_symlink():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, clone / name)
    home = tmp_path / "home"
    home.mkdir()
    # The interpreter's own folder (python3 >= 3.11), then the system's: no venv, no ~/.local/bin.
    python_bin = Path(getattr(sys, "_base_executable", sys.executable)).parent
    assert (python_bin / "python3").exists(), python_bin
    env = {
        "HOME": str(home),
        "USER": "newcomer",
        "LANG": "C.UTF-8",
        "PATH": f"{python_bin}{os.pathsep}/usr/bin{os.pathsep}/bin",
        # The package index as this machine reaches it, and its download cache (no other network).
        **{k: v for k, v in os.environ.items() if k.startswith("PIP_") and k != "PIP_REQUIRE_VIRTUALENV"},
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip"),
    }
    script = "set -euo pipefail\n" + quick_start()
    run = subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert os.path.islink(home / ".local" / "bin" / "attend")
    # The last line of the block was `attend peers`: it answered, as the human, about an empty machine.
    assert run.stdout.rstrip().splitlines()[-1].lower().startswith("no live"), run.stdout[-2000:]
    # The venv's own pip (no upgrade) installed attend: a plain send still loads no regular expressions.
    # The newcomer made its mailbox at its terminal first (asked once there: attend.domain.sessions.humans).
    from attend.spool import Spool

    Spool.open(home / ".cache" / "attend").make_maildir("newcomer", "humans")
    venv = clone / ".venv" / "bin"
    send = subprocess.run(
        [str(venv / "python"), "-X", "importtime", str(venv / "attend"), "send", "hello"],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert send.returncode == 0, send.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in send.stderr.splitlines() if line.startswith("import time:")}
    assert "re" not in loaded, "a plain send imported re"


def first_use(term: str) -> str:
    """The README's running text from the first use of ``term`` on, past the paragraph that links the
    glossary (which lists the terms): code spans and blocks left out, they name things, not explain."""
    text = README.read_text(encoding="utf-8").split("](docs/guide/glossary.md)", 1)[1].split("\n\n", 1)[1]
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))
    found = re.search(rf"\b{term}s?\b", prose)
    assert found, f"the README never uses {term!r}"
    return " ".join(prose[found.start() :].split())


@pytest.mark.parametrize("term", ["conduit", "trailer"])
def test_a_term_of_the_glossary_is_explained_where_the_readme_first_uses_it(term: str) -> None:
    shown = first_use(term)
    assert re.match(rf"{term}s? \(", shown), f"say what a {term} is where the README first uses it: {shown[:80]!r}"


# A terminal test as the suite writes one (a fixture that needs the program), and one that needs none.
TERMINAL_TESTS = """
import pytest

from tests.support import require_tools


@pytest.fixture
def mutt():
    require_tools("mutt", "tmux")


def test_reads_the_spool_in_mutt(mutt):
    pass


def test_needs_no_terminal():
    pass
"""


# A test that drives a real client's TUI in tmux (tests/e2e/tui.py), as the e2e tests do.
TUI_TESTS = """
from tests.e2e.tui import TUI


class World:  # as much of an E2EWorld as the TUI needs before it looks for tmux
    def project(self, name):
        return name


def test_wakes_the_idle_tui():
    TUI(World(), None)


def test_needs_no_terminal():
    pass
"""


def run_pytest(tmp_path: Path, *args: str, tests: str = TERMINAL_TESTS) -> subprocess.CompletedProcess[str]:
    """pytest in a process of its own, with this suite's conftest and a PATH that holds neither mutt
    nor tmux (an empty folder): as on a machine without them."""
    (tmp_path / "test_terminal.py").write_text(tests)
    (tmp_path / "bin").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # No third-party plugins (textual's snapshots, xdist, anyio): only this suite's conftest is asked.
    env.update(PATH=str(tmp_path / "bin"), PYTHONPATH=str(REPO), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    argv = [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider"]
    argv += ["--rootdir", str(tmp_path), "-c", str(REPO / "pyproject.toml"), str(tmp_path / "test_terminal.py"), *args]
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_without_mutt_or_tmux_the_terminal_tests_fail_saying_what_to_install(tmp_path: Path) -> None:
    out = run_pytest(tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr  # the run fails: never green without them
    assert "1 passed, 1 error" in out.stdout and "skipped" not in out.stdout, out.stdout
    assert "mutt and tmux not installed: apt-get install mutt tmux" in out.stdout, out.stdout


def test_not_terminal_leaves_the_terminal_tests_out_on_purpose(tmp_path: Path) -> None:
    out = run_pytest(tmp_path, "-m", "not terminal")  # conftest marks a test that uses the mutt fixture
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed, 1 deselected" in out.stdout and "skipped" not in out.stdout, out.stdout


def test_without_tmux_the_tui_tests_fail_saying_what_to_install_and_not_terminal_leaves_them_out(
    tmp_path: Path,
) -> None:
    """The real clients' TUI tests skipped without tmux outside CI: a green run that never drove them."""
    out = run_pytest(tmp_path, tests=TUI_TESTS)
    assert out.returncode == 1 and "1 failed, 1 passed" in out.stdout and "skipped" not in out.stdout, out.stdout
    assert "tmux not installed: apt-get install tmux" in out.stdout, out.stdout
    left = run_pytest(tmp_path, "-m", "not terminal", tests=TUI_TESTS)
    assert left.returncode == 0 and "1 passed, 1 deselected" in left.stdout, left.stdout
