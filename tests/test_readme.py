"""The README's promises, run as written: its quick start in a clean HOME, from a copy of this
checkout, with no virtual environment on PATH, ends with `attend peers` answering."""

from __future__ import annotations

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
