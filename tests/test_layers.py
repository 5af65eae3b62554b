"""The layers hold: only the gate (attend/spool.py, and the stdlib-only attend/layout.py beside it) touches
the file system, and import-linter's contracts (pyproject.toml, run by .ci/run) fail on a planted violation.

The file-system rule is read from the source with ``ast``: any call of an ``os`` / ``os.path`` / ``shutil`` /
``tempfile`` / ``glob`` file-system function, the builtin ``open``, or a method whose name is a ``pathlib``
file-system method (matched by name on any object), outside the gate, is a violation, unless the module is
in ALLOWED, which names the modules that touch files *outside* the spool (Claude Code's configuration, /proc,
the user's ~/.config) with the reason. An allowed module must not import attend.spool, so it cannot be
handed a spool path. See docs/architecture/spool.md.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "attend"

GATE = frozenset({"attend.spool", "attend.layout"})

# Modules that touch files outside the spool, and why. None of them may import attend.spool.
ALLOWED: dict[str, str] = {
    "attend.identity": "reads /proc and Claude Code's session records (~/.claude/sessions) to name the caller",
    "attend.hosts.claude": "reads Claude Code's session records (~/.claude/sessions) to find the caller's session",
    "attend.hosts.base": "reads a host transcript's first line (a Codex rollout, a Gemini chat) to tell whose it is",
    "attend.hosts.codex": "reads /proc/<pid>/fd and Codex's rollouts (~/.codex/sessions): a thread's cwd, transcript",
    "attend.hosts.gemini": "writes and reads attend's records of Gemini CLI processes; finds a session's chat file",
    "attend.hosts.kin": "reads /proc/<pid>/fd (what a process left without its parent holds open) and /dev/tty",
    "attend.procfs": "reads Claude Code's session records for the identity walk and the fast drain's ancestry check",
    "attend.setup.install": "reads and writes Claude Code's configuration (settings.json, hooks, skills, MCP)",
    "attend.setup.hosts": "looks for each host's config folder (install wires the hosts it finds)",
    "attend.setup.plan": "reads and writes Codex CLI's and Gemini CLI's configuration (hooks, config.toml, settings)",
    "attend.setup.checks": "reads a host's settings file and checks its hook scripts and MCP command are executable",
    "attend.setup.safetoml": "reads Codex's config.toml to measure its size and nesting before it is parsed",
    "attend.setup.data": "lists attend's packaged data (settings, hooks, skills)",
    "attend.domain.attention.reheat": "reads the reheat's text, skills/attend/reheat.md, from attend's packaged data",
    "attend.domain.settings.config": "reads config.yaml and the project's .claude/attend.yaml; writes the user's files",
    "attend.domain.settings.trust": "hashes the project files a script sensor names; reads the user's approvals (trusted.json)",
    "attend.domain.settings.scenes": "reads ~/.config/attend/scenes.yaml",
    "attend.domain.sessions.transcript": "reads Claude Code's session transcripts (~/.claude/projects) for context and cadence",
    "attend.conduits.inbox_client": "posts to Claude Code's inbox socket; reads its settings and transcript to confirm",
    "attend.verbs.permissions": "reads Claude Code's settings files and checks the MCP command is executable",
    "attend.testing.standin": "writes and removes a stand-in session's record under a test's ~/.claude/sessions",
    "attend.testing.standin_host": "writes a stand-in session's background child's output to the file a test names",
    "attend.testing.demo": "builds and removes the demo's throwaway HOME",
    "attend.cli.docs": "writes the generated CLI reference, docs/cli/attend.md",
    "attend.mcp.front": "opens /dev/null and serves the protocol on duplicates of the stdio descriptors",
    "attend.relay.settings": "checks the relay's credential and CA files named in config.yaml, reads its password file",
    "attend.leases.tree": "finds the project root (.git), resolves paths, writes the repository's pre-commit hook",
    "attend.mcp.discovery": "writes the generated table of the SDK's discovery answers, attend/mcp/answers.py",
}

OS_FUNCS = frozenset(
    {
        "open",
        "fdopen",
        "listdir",
        "scandir",
        "walk",
        "fwalk",
        "rename",
        "renames",
        "replace",
        "link",
        "symlink",
        "readlink",
        "unlink",
        "remove",
        "removedirs",
        "rmdir",
        "mkdir",
        "makedirs",
        "mkfifo",
        "mknod",
        "utime",
        "chmod",
        "lchmod",
        "chown",
        "lchown",
        "stat",
        "lstat",
        "access",
        "truncate",
    }
)
OS_PATH_FUNCS = frozenset(
    {"exists", "lexists", "isfile", "isdir", "islink", "getsize", "getmtime", "getatime", "getctime", "samefile"}
)
PATH_METHODS = frozenset(
    {
        "read_text",
        "read_bytes",
        "write_text",
        "write_bytes",
        "open",
        "unlink",
        "mkdir",
        "rmdir",
        "iterdir",
        "glob",
        "rglob",
        "rename",
        "replace",
        "touch",
        "stat",
        "lstat",
        "exists",
        "is_dir",
        "is_file",
    }
)
SHUTIL_SAFE = frozenset({"which", "get_terminal_size"})  # no file-system access
TEMPFILE_SAFE = frozenset({"gettempdir", "gettempdirb", "gettempprefix"})


@dataclass(frozen=True, order=True)
class Violation:
    module: str
    line: int
    call: str
    why: str = "touches the file system outside the gate"

    def __str__(self) -> str:
        return f"{self.module}:{self.line}:{self.call}  ({self.why})"


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> the module or module function it stands for, from every import in the file
    (module level and inside functions alike: a lazy import is still an import)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    names[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The resolved dotted name of ``a.b.c`` when ``a`` is an imported name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    return ".".join([aliases[node.id], *reversed(parts)])


def _fs_function(dotted: str) -> bool:
    mod, _, func = dotted.rpartition(".")
    if mod == "os":
        return func in OS_FUNCS
    if mod in ("os.path", "posixpath"):
        return func in OS_PATH_FUNCS
    if mod == "shutil":
        return func not in SHUTIL_SAFE
    if mod == "tempfile":
        return func not in TEMPFILE_SAFE
    if mod == "glob":
        return func in ("glob", "iglob")
    return dotted in ("io.open", "builtins.open")


def _is_spool(receiver: ast.expr) -> bool:
    """A call on the gate's own object: ``spool.read_text(...)``, ``self.spool.exists(...)``,
    ``ctx.spool.touch(...)``, ``Spool.open(...)``. Recognised by name, the way the package names it; a path
    built from it (``spool.root / "log"``) is not the gate and is still flagged."""
    name = (
        receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id if isinstance(receiver, ast.Name) else ""
    )
    return name == "Spool" or name.lstrip("_").lower().endswith("spool")


def _proc_literal(arg: ast.expr) -> bool:
    """``"/proc"``, ``"/proc/self/stat"`` or ``f"/proc/{pid}/stat"``: a path that starts in /proc by its text."""
    head = arg.values[0] if isinstance(arg, ast.JoinedStr) and arg.values else arg
    return (
        isinstance(head, ast.Constant)
        and isinstance(head.value, str)
        and (head.value == "/proc" or head.value.startswith("/proc/"))
    )


def fs_calls(source: str, module: str) -> list[Violation]:
    """Every file-system operation in ``source``: calls, and references to a file-system function
    (``key=os.path.getmtime``, ``fn = os.unlink``) that would be called elsewhere."""
    tree = ast.parse(source)
    aliases = _aliases(tree)
    found: set[Violation] = set()
    # A call on a literal /proc path reads the kernel's process table: never a spool path.
    proc_calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args and _proc_literal(n.args[0])]
    proc = {id(n) for n in proc_calls} | {id(n.func) for n in proc_calls}
    for node in ast.walk(tree):
        if id(node) in proc:
            continue
        if isinstance(node, ast.Attribute | ast.Name) and isinstance(node.ctx, ast.Load):
            dotted = _dotted(node, aliases) if isinstance(node, ast.Attribute) else aliases.get(node.id)
            if dotted and _fs_function(dotted):
                found.add(Violation(module, node.lineno, dotted))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open" and "open" not in aliases:
            found.add(Violation(module, node.lineno, "open"))
        elif isinstance(func, ast.Attribute) and func.attr in PATH_METHODS:
            dotted = _dotted(func, aliases)
            if dotted is not None and not _fs_function(dotted):
                continue  # a module function of the same name (dataclasses.replace, re.compile...), not a Path
            if dotted is None and func.attr == "replace" and (len(node.args) != 1 or node.keywords):
                continue  # str.replace(old, new) and datetime.replace(tzinfo=...); Path.replace takes one target
            if dotted is None and not _is_spool(func.value):
                target = ast.unparse(func.value)
                found.add(Violation(module, node.lineno, f"{target}.{func.attr}()"))
    return sorted(found)


def spool_imports(source: str, module: str) -> list[Violation]:
    """Every import of attend.spool in ``source`` (absolute or relative)."""
    package = module.rpartition(".")[0]
    found: list[Violation] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            if t == "attend.spool" or t.startswith("attend.spool."):
                found.append(Violation(module, node.lineno, f"import {t}", "allowed module imports the gate"))
                break
    return found


def check(source: str, module: str, allowed: dict[str, str] = ALLOWED) -> list[Violation]:
    """The two rules for one module: outside the gate no file-system operation unless allowed, and an
    allowed module never imports the gate."""
    if module in GATE:
        return []
    if module in allowed:
        return spool_imports(source, module)
    return fs_calls(source, module)


def package_modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        mods[".".join(parts)] = path
    return mods


# --- the rules, on the real package ---------------------------------------------------------------


def test_only_the_gate_touches_the_file_system() -> None:
    violations = [v for mod, path in package_modules().items() for v in check(path.read_text(), mod)]
    by_module: dict[str, list[str]] = {}
    for v in violations:
        by_module.setdefault(v.module, []).append(f"  {v.module}:{v.line}:{v.call}")
    if violations:
        report = "\n".join(line for mod in sorted(by_module) for line in by_module[mod])
        pytest.fail(
            f"{len(violations)} file-system operation(s) outside the gate (attend/spool.py, attend/layout.py) in"
            f" {len(by_module)} module(s); route them through the gate, or, for files outside the spool, add the"
            f" module to ALLOWED with a reason:\n{report}",
            pytrace=False,
        )


def test_the_allowlist_is_no_wider_than_it_must_be() -> None:
    modules = package_modules()
    gone = sorted(set(ALLOWED) - set(modules))
    assert not gone, f"ALLOWED names modules that no longer exist: {gone}"
    idle = sorted(m for m in ALLOWED if not fs_calls(modules[m].read_text(), m))
    assert not idle, f"ALLOWED names modules that touch no file; drop them so the rule covers them: {idle}"


def test_the_layout_module_needs_the_standard_library_only() -> None:
    path = PACKAGE / "layout.py"
    if not path.exists():
        pytest.skip("no attend/layout.py")
    tops: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            tops.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            tops.add("." if node.level else (node.module or "").split(".")[0])
    foreign = sorted(tops - sys.stdlib_module_names - {"__future__"})
    assert not foreign, f"attend/layout.py is on the hot paths and must import the standard library only: {foreign}"


# --- the checks bite ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "snippet",
    [
        "import os\nos.unlink(p)\n",
        "from os import unlink as rm\nrm(p)\n",
        "import os.path\nnames = sorted(xs, key=os.path.getmtime)\n",
        "def f(p):\n    with open(p) as fh:\n        return fh.read()\n",
        "import shutil\nshutil.rmtree(d)\n",
        "def f(root):\n    return [p for p in (root / 'rooms').iterdir()]\n",
        "def f(root):\n    (root / 'log').write_text('x')\n",
        "def f(tmp, dest):\n    tmp.replace(dest)\n",
        "def f(spool):\n    return (spool.root / 'log').read_text()\n",
        "def f(ctx):\n    return ctx.spool.dir('rooms').iterdir()\n",
    ],
)
def test_the_ast_rule_flags_a_planted_file_operation(snippet: str) -> None:
    found = check(snippet, "attend.domain.x")
    assert found and all(v.module == "attend.domain.x" for v in found), snippet
    assert found[0].line >= 1


@pytest.mark.parametrize(
    "snippet",
    [
        "import shutil\nexe = shutil.which('claude')\n",
        "s = 'a-b'.replace('-', '_')\n",
        "import dataclasses\nx = dataclasses.replace(obj, a=1)\n",
        "import os\nhome = os.environ.get('HOME')\npid = os.getpid()\n",
        "import re\nrx = re.compile('x')\n",
        "def f(spool, ctx):\n    spool.touch('a')\n    return ctx.spool.read_text('log'), self.spool.exists('x')\n",
        "from attend.spool import Spool\nsp = Spool.open()\n",
        "import os\ndef f(pid):\n    with open(f'/proc/{pid}/stat') as fh:\n        return os.path.isdir('/proc')\n",
    ],
)
def test_the_ast_rule_lets_harmless_calls_pass(snippet: str) -> None:
    assert check(snippet, "attend.domain.x") == [], snippet


def test_the_gate_and_allowed_modules_are_exempt_but_allowed_ones_may_not_import_the_gate() -> None:
    planted = "import os\nos.unlink(p)\n"
    assert check(planted, "attend.spool") == []
    assert check(planted, "attend.setup.install") == []
    for imp in (
        "from attend.spool import Spool",
        "import attend.spool",
        "from attend import spool",
        "from .. import spool",
    ):
        found = check(f"{imp}\n{planted}", "attend.setup.install")
        assert [v.why for v in found] == ["allowed module imports the gate"], imp


LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint_imports(package_parent: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{package_parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=package_parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed (pip install -e '.[dev]')")
def test_import_linter_fails_on_a_planted_violation(tmp_path: Path) -> None:
    clean, dirty = tmp_path / "clean", tmp_path / "dirty"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "_data")
    for copy in (clean, dirty):
        shutil.copytree(PACKAGE, copy / "attend", ignore=ignore)
    rooms = dirty / "attend" / "domain" / "rooms.py"
    rooms.write_text("import click  # planted: the domain must not import a frontend's library\n" + rooms.read_text())

    ok = _lint_imports(clean)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = _lint_imports(dirty)
    assert bad.returncode != 0, bad.stdout + bad.stderr
    assert "attend.domain.core.rooms -> click" in bad.stdout, bad.stdout


# ---------------------------------------------------------------------- one declaration of the tree

# Gate methods whose positional arguments are path parts (write_state and create_* take data first).
PART_METHODS = frozenset(
    {
        "read", "read_text", "read_record", "exists", "mtime", "mtime_ns", "names", "entries", "make_dir",
        "folder", "lock", "hold", "is_held", "set_aside", "write_state", "create_exclusive", "create_linked",
        "touch", "remove", "remove_tree", "remove_dir", "move_entry", "move_all", "named_lock", "path",
    }
)  # fmt: skip


def declared_names() -> set[str]:
    """Every string attend.layout declares at module level: the folders and files of the tree."""
    tree = ast.parse((PACKAGE / "layout.py").read_text())
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            for value in ast.walk(node.value) if node.value is not None else ():
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    out.add(value.value)
    return out


def undeclared_parts(source: str, module: str, declared: set[str]) -> list[Violation]:
    """String literals passed to the gate as path parts that attend.layout does not declare."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in PART_METHODS or not _is_spool(node.func.value):
            continue
        for arg in node.args:
            for part in arg.elts if isinstance(arg, ast.Tuple) else [arg]:
                if isinstance(part, ast.Constant) and isinstance(part.value, str) and part.value not in declared:
                    found.append(Violation(module, node.lineno, f"{node.func.attr}({part.value!r})"))
    return found


def test_every_spool_name_the_code_uses_is_declared_in_the_layout() -> None:
    declared = declared_names()
    found = [
        v
        for module, path in package_modules().items()
        if module not in GATE
        for v in undeclared_parts(path.read_text(), module, declared)
    ]
    assert not found, "declare these in attend/layout.py (one home for the tree):\n" + "\n".join(map(str, found))


def test_the_layout_rule_flags_an_undeclared_spool_name() -> None:
    planted = "def f(spool, sid):\n    return spool.read_text('sessions', sid, 'secret-state')\n"
    assert [v.call for v in undeclared_parts(planted, "attend.domain.x", declared_names())] == [
        "read_text('secret-state')"
    ]
    ok = "def f(ctx, sid):\n    return ctx.spool.exists('sessions', sid, 'enrolled')\n"
    assert undeclared_parts(ok, "attend.domain.x", declared_names()) == []
