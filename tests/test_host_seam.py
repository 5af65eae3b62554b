"""A host is a named seam, not a branch in every module: outside the host adapters (attend/hosts/) and
their setup adapters (attend/setup/<host>.py), no module of attend names a host by its string or
branches on which host a session is (it asks ``attend.hosts`` or ``attend.setup.hosts``: a ``Host``
member such as ``turn_end``, ``unattended`` or ``wake``), and the two registries list the same hosts in
the same order. So a new host is one module in each (docs/architecture/hosts.md, "A fourth host").

Nor does any name a client: outside those modules, no identifier (a variable, attribute, function,
class, argument, keyword or import), no word-like string (no whitespace: a path, a file or folder
name, a key, a variable, a flag) and no file name under attend/ names one ("claude", "codex",
"gemini", in any case): the core speaks of the host and its process (``host_pid``, ``by-host/``),
never of one client. NAMED lists, module by module, the names that must stay, each with its reason.

The rules are read from the source with ``ast``:
- a string constant equal to a host's name ("claude", "codex", "gemini"), docstrings aside, anywhere
  outside those modules is a violation, unless its module is in EXCEPTIONS, which names each with its
  reason and what it would need to ask the seam instead;
- a comparison (``==``, ``!=``, ``is``, ``in``…) or an ``isinstance`` against one host (its name, its
  registry constant ``CODEX``, its ``.name``, a host module's ``HOST``, its class) is a violation
  anywhere outside those modules, with no exceptions: that is a branch on a host.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from attend import hosts
from attend.hosts.base import Host
from attend.setup import hosts as setups

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "attend"

ADAPTERS = frozenset({"attend.setup.claude", "attend.setup.codex", "attend.setup.gemini"})

# Modules that still name a host by its string, and why. Each would ask the seam instead as it says.
EXCEPTIONS: dict[str, str] = {}

# Names of a client that stay outside the seam, by module: (the names, why). Every other name of a
# client fails, in these modules too; prose (a string with a space) and docstrings are for people.
INSTALLED = "installed into the client's configuration by name; renaming it breaks every installed hook"
NAMED: dict[str, tuple[frozenset[str], str]] = {
    "attend.layout": (
        frozenset({"by-claude", "claude_pid"}),
        "an earlier release's names in the spool (layout.BY_HOST_BEFORE, HOST_PID_BEFORE), kept so that a "
        "spool it wrote is carried over in place (Spool.carry_over) and its enrollments still read",
    ),
    "attend.conduits.fastdrain": (
        frozenset({"CLAUDE_PID"}),
        "the variable a host's hooks run with naming its process, where the fast drain's /clear walk "
        "starts: asking attend.hosts instead would import every adapter, ~10 ms on every turn end",
    ),
    "attend.conduits.hosthooks": (
        frozenset({"gemini-start", "codex-stop", "--codex", "gemini"}),
        "the hooks attend installs into one host by name (" + INSTALLED + "); the SessionStart hook "
        "writes the record attend keeps for that host's process through its adapter (attend.hosts.gemini)",
    ),
    "attend.conduits.waiter": (
        frozenset({"--codex"}),
        "`attend wait --codex <id>`, the QUEUE waiter's command line, started by the Stop hook of any "
        "installed release",
    ),
    "attend.domain.settings.config": (
        frozenset({".claude"}),
        "the project overlay's documented path, .claude/attend.yaml, which users write",
    ),
    "attend.setup.hosts": (
        frozenset({"CLAUDE", "CODEX", "GEMINI", "attend.setup.claude", "attend.setup.codex", "attend.setup.gemini"}),
        "the setup adapters' registry: it lists them, as attend.hosts lists the hosts",
    ),
    "attend.setup.install": (
        frozenset({".claude", ".claude.json", "CLAUDE_CONFIG_DIR", "claude", "claude_json", "new_claude"}),
        "install's step for the primary client's own user file (~/.claude.json, its MCP registration), "
        "reported as `claude_json` in install's --json output",
    ),
    "attend.setup.plan": (frozenset({"claude_json"}), "as attend.setup.install: the plan of that step"),
    "attend.verbs.install": (frozenset({"claude_json"}), "the --json output's key (attend.setup.install)"),
    "attend.verbs.uninstall": (frozenset({"claude_json"}), "the --json output's key (attend.setup.install)"),
    "attend.verbs.permissions": (
        frozenset({"claude", "claude_json"}),
        "the --json output's key (attend.setup.install): permissions reads the primary client's own file",
    ),
    "attend.testing.standin": (
        frozenset({"CLAUDE", "CLAUDECODE", "CLAUDE_CODE_SESSION_ID"}),
        "the stand-in plays the primary client's process for the demo and the tests: its variables and records",
    ),
    "attend.testing.demo": (
        frozenset({".claude", "CLAUDE"}),
        "the demo runs stand-ins of the primary client in a home of its own (attend.testing.standin)",
    ),
}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def in_seam(module: str) -> bool:
    return module == "attend.hosts" or module.startswith("attend.hosts.") or module in ADAPTERS


def named_hosts(source: str, names: frozenset[str] = frozenset(hosts.NAMES)) -> list[tuple[int, str]]:
    """(line, name) of each string constant in ``source`` equal to a host's name, docstrings aside."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
        if id(node) not in docstrings
    )


# The registry's names for one host (CLAUDE, CODEX, GEMINI, DEFAULT), each host module's ``HOST``, and
# the hosts' classes: an expression naming one of these names one host.
HOST_CONSTANTS = frozenset(k for k, v in vars(hosts).items() if isinstance(v, Host)) | {"HOST"}
HOST_CLASSES = frozenset(type(h).__name__ for h in hosts.HOSTS)
HOST_MODULES = frozenset({"attend.hosts", *(f"attend.hosts.{h.name}" for h in hosts.HOSTS)})


def _host_bindings(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(local names bound to one host or its class, local names bound to the registry or a host's
    module), from the module's imports."""
    one, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                local = alias.asname or alias.name
                if f"{node.module}.{alias.name}" in HOST_MODULES:
                    modules.add(local)  # from attend import hosts; from attend.hosts import codex
                elif node.module in HOST_MODULES and alias.name in HOST_CONSTANTS | HOST_CLASSES:
                    one.add(local)  # from attend.hosts import CODEX; from attend.hosts.codex import HOST
        elif isinstance(node, ast.Import):
            modules.update(a.asname for a in node.names if a.asname and a.name in HOST_MODULES)
    return one, modules


def compared_hosts(source: str, names: frozenset[str] = frozenset(hosts.NAMES)) -> list[tuple[int, str]]:
    """(line, code) of each comparison in ``source`` against one host, and each ``isinstance`` with a
    host's class: its name as a string, a name bound to the host (``CODEX``, ``codex.HOST``,
    ``hosts.GEMINI``) or that name's ``.name``, alone or in a tuple, list or set compared with ``in``."""
    tree = ast.parse(source)
    one, modules = _host_bindings(tree)

    def names_a_host(node: ast.expr) -> bool:
        if isinstance(node, ast.Attribute) and node.attr == "name":
            node = node.value  # CODEX.name: the host's name
        if isinstance(node, ast.Name):
            return node.id in one
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            return node.attr in HOST_CONSTANTS | HOST_CLASSES
        return False

    def one_host(node: ast.expr) -> bool:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(one_host(e) for e in node.elts)
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str) and node.value in names
        return names_a_host(node)

    def branches(node: ast.AST) -> bool:
        if isinstance(node, ast.Compare):
            return any(one_host(o) for o in (node.left, *node.comparators))
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
            and one_host(node.args[1])
        )

    return sorted((node.lineno, ast.unparse(node)) for node in ast.walk(tree) if branches(node))


CLIENT = re.compile("|".join(map(re.escape, hosts.NAMES)), re.IGNORECASE)


def _docstrings(tree: ast.AST) -> set[int]:
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _names_in(node: ast.AST, docstrings: set[int]) -> list[str]:
    """The identifiers a node binds or uses, or the word-like string it is."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword):
        return [node.arg] if node.arg else []
    if isinstance(node, ast.alias):
        return [node.name, *([node.asname] if node.asname else [])]
    if isinstance(node, ast.ImportFrom):
        return [node.module] if node.module else []
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
        # A host's name alone is named_hosts' rule; prose (with whitespace) is for people.
        return [] if node.value in hosts.NAMES or any(c.isspace() for c in node.value) else [node.value]
    return []


def client_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of each identifier and word-like string in ``source`` that names a client."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    return sorted(
        {
            (getattr(node, "lineno", 0), name)
            for node in ast.walk(tree)
            for name in _names_in(node, docstrings)
            if CLIENT.search(name)
        }
    )


def names_outside_the_seam(package: Path) -> dict[str, list[tuple[int, str]]]:
    """Each module under ``package`` outside the seam, with the names of a client NAMED does not allow it."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, package.parent)
        if in_seam(module):
            continue
        allowed = NAMED.get(module, (frozenset(), ""))[0]
        hits = [(line, name) for line, name in client_names(path.read_text(encoding="utf-8")) if name not in allowed]
        if hits:
            found[module] = hits
    return found


def test_no_module_outside_the_host_adapters_names_a_client_by_an_identifier_or_a_path() -> None:
    found = names_outside_the_seam(PACKAGE)
    report = "\n".join(f"  {m}:{line}: {name}" for m, hits in found.items() for line, name in hits)
    assert not found, (
        "these modules name a client by an identifier or a word-like string (a path, a key, a variable); "
        "name the host instead (host_pid, by-host/), ask attend.hosts (Host members: records_home, "
        f"config_home…), or add the name to NAMED with a reason:\n{report}"
    )


def test_no_file_of_attend_outside_the_host_adapters_names_a_client() -> None:
    named = [
        str(path.relative_to(ROOT))
        for path in sorted(PACKAGE.rglob("*"))
        if "__pycache__" not in path.parts and CLIENT.search(path.name)
        if not in_seam(module_name(path.with_suffix(".py")))
    ]
    assert not named, named


def test_every_name_allowed_is_still_named_where_it_is_allowed() -> None:
    stale = {
        module: sorted(allowed - {name for _, name in client_names(path.read_text(encoding="utf-8"))})
        for module, (allowed, _) in NAMED.items()
        if (path := PACKAGE.parent / (module.replace(".", "/") + ".py")).exists()
        or (path := PACKAGE.parent / module.replace(".", "/") / "__init__.py").exists()
    }
    assert not {m: s for m, s in stale.items() if s}, stale
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    assert not set(NAMED) - modules, sorted(set(NAMED) - modules)


@pytest.mark.parametrize(
    "snippet",
    [
        "def f(who):\n    return who.claude_pid\n",
        'def f(spool, key):\n    return spool.read_text("by-claude", key)\n',
        "def of_codex(pid):\n    return pid\n",
        "from attend.hosts import gemini\n",
        "from attend.hosts.claude import sessions_home\n",
        'HOME = "~/.gemini/settings.json"\n',
        'KEY = "claude_pid"\n',
        "def f(*, codex_home):\n    return codex_home\n",
        "class ClaudeRecord:\n    pass\n",
    ],
)
def test_the_rule_flags_a_planted_name_of_a_client(snippet: str) -> None:
    assert client_names(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        'def f(who):\n    """The Claude process: claude_pid."""\n    return who.host_pid\n',
        'LINE = "a Claude Code session that has not joined"\n',
        'def f(spool, key):\n    return spool.read_text("by-host", key)\n',
        'NAME = "codex"\n',  # a host's name alone: named_hosts' rule, with its own exceptions
    ],
)
def test_the_rule_lets_prose_docstrings_and_neutral_names_pass(snippet: str) -> None:
    assert client_names(snippet) == [], snippet


def test_no_module_outside_the_host_adapters_branches_on_one_host() -> None:
    found = {
        module: hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if not in_seam(module := module_name(path))
        if (hits := compared_hosts(path.read_text(encoding="utf-8")))
    }
    report = "\n".join(f"  {m}:{line}: {code}" for m, hits in found.items() for line, code in hits)
    assert not found, (
        "these modules compare a session's host with one host; ask its Host a member instead (turn_end, "
        f"unattended, wake, wake_refusal, wake_command…), so a new host needs no branch here:\n{report}"
    )


def test_no_module_outside_the_host_adapters_names_a_host_by_its_string() -> None:
    found = {
        module: hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if not in_seam(module := module_name(path)) and module not in EXCEPTIONS
        if (hits := named_hosts(path.read_text(encoding="utf-8")))
    }
    report = "\n".join(f"  {m}:{line}: {name!r}" for m, hits in found.items() for line, name in hits)
    assert not found, (
        "these modules name a host by its string; ask attend.hosts (Host members, HOSTS, by_name, of) or "
        f"attend.setup.hosts (the setup adapters) instead, or add the module to EXCEPTIONS with a reason:\n{report}"
    )


def test_the_exceptions_name_modules_that_exist() -> None:
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    assert not set(EXCEPTIONS) - modules, sorted(set(EXCEPTIONS) - modules)


@pytest.mark.parametrize(
    "snippet",
    [
        'def f(who):\n    return who.host == "codex"\n',
        'CLIENTS = ("claude", "codex", "gemini")\n',
        'def f(record):\n    return [(record, "gemini")]\n',
        'def f(who):\n    """The host, or "claude".\n    """\n    return who.host or "claude"\n',
    ],
)
def test_the_rule_flags_a_planted_host_name(snippet: str) -> None:
    assert named_hosts(snippet)


@pytest.mark.parametrize(
    "snippet",
    [
        'def f(who):\n    """Whether the session is Codex\'s: "codex" by name."""\n    return who.host is None\n',
        'KEY = "codex_trusted"\nLINE = f"{KEY}: claude"\n',
    ],
)
def test_the_rule_lets_docstrings_and_longer_strings_pass(snippet: str) -> None:
    assert named_hosts(snippet) == []


@pytest.mark.parametrize(
    "snippet",
    [
        "from attend.hosts import CODEX\ndef f(who):\n    return who.host != CODEX.name\n",
        "from attend.hosts import GEMINI as G\ndef f(who):\n    return who.host == G.name\n",
        "from attend import hosts\ndef f(who):\n    return hosts.of(who.host) is hosts.GEMINI\n",
        "from attend.hosts import codex\ndef f(who):\n    return hosts.of(who.host) is codex.HOST\n",
        "from attend.hosts import CLAUDE, CODEX\ndef f(who):\n    return who.host in (CLAUDE.name, CODEX.name)\n",
        "from attend.hosts.codex import Codex\ndef f(host):\n    return isinstance(host, Codex)\n",
        'def f(who):\n    return who.host == "gemini"\n',
        'def f(who):\n    return who.host not in {"codex"}\n',
    ],
)
def test_the_rule_flags_a_planted_comparison_with_one_host(snippet: str) -> None:
    assert compared_hosts(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        "from attend import hosts\nfrom attend.hosts.base import QUEUE\nASKED = hosts.of(None).wake != QUEUE\n",
        "from attend.hosts import HOSTS\ndef f(name):\n    return [h for h in HOSTS if h.name == name]\n",
        "from attend.hosts import DEFAULT\nCLIENT = DEFAULT.name\n",
        'def f(check):\n    return check.name == "config.toml"\n',
    ],
)
def test_the_rule_lets_questions_to_the_seam_pass(snippet: str) -> None:
    assert compared_hosts(snippet) == [], snippet


def test_every_host_has_one_setup_adapter_of_its_name_in_the_same_order() -> None:
    assert setups.NAMES == hosts.NAMES
    assert [a.name for a in setups.ADAPTERS if a.primary] == [hosts.DEFAULT.name]
    assert len(set(hosts.NAMES)) == len(hosts.NAMES)
