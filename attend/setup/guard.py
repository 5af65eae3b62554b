"""The PreToolUse guard behind hooks/ways/attend-guard-pre.sh. INTERIM: it goes when the attend MCP
frontend is every agent session's default (docs/architecture/settings.md, "The guard").

Closed list, each entry with its repair:
1. ``attend run`` started from the Bash tool: it blocks the call and discards its notifications.
   Repair: launch it with the Monitor tool.
2. A Bash, Read, Edit, MultiEdit, Write, NotebookEdit, Glob or Grep call that reaches inside attend's
   spool or config folder, by any path form: absolute, ``~``, ``$HOME``, ``$XDG_*``, ``$ATTEND_HOME``,
   relative to the session's cwd (a ``cd`` earlier in the command counts), or through a symlink.
   Repair: the attend verb that does it.

``attend …`` commands are exempt from entry 2. A Monitor call is never refused. Under matcher ``*``
the client presents it as ``tool_name: "Monitor"``; a Bash-shaped call that carries Monitor's
``timeout_ms`` is treated as Monitor too.

Contract (docs/architecture/settings.md, "The guard"): exit 0 or 2 only; a refusal prints one reason
line and one repair line on stderr; any internal failure allows with one stderr line. The standard
library and ``attend.layout`` (itself stdlib only, where the roots it protects are defined) and
nothing else, because this runs before every tool call when wired (bench/guard.py measures it).
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import sys
from collections.abc import Iterator, Mapping

from attend import layout, safejson

TAG = "[attend-guard]"
SHELLS = {"bash", "sh", "zsh", "dash", "ksh"}
SEPARATORS = {";", "&&", "||", "|", "&", "|&", "(", ")", "{", "}", ";;", "!"}
# Words that run the next word as the command; the value says how many of their own options take an argument.
PREFIXES: dict[str, set[str]] = {
    "timeout": {"-k", "-s", "--kill-after", "--signal"},
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n", "-p"},
    "env": {"-u", "--unset", "-C", "--chdir"},
    "sudo": {"-u", "-g", "-C", "-h", "-p", "-U"},
    "command": set(),
    "exec": set(),
    "setsid": set(),
    "nohup": set(),
    "time": set(),
    "then": set(),
    "else": set(),
    "do": set(),
    "xargs": {"-n", "-I", "-L", "-P", "-d", "-s", "-E"},
    "stdbuf": set(),
}
FILE_KEYS = {"Read": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path"}
FILE_KEYS["NotebookEdit"] = "notebook_path"
MAX_DEPTH = 4  # nested `bash -c` / `eval` levels unwrapped
GLOB_CHARS = "*?["

RUN_REASON = "`attend run` from the Bash tool blocks the call and discards its notifications."
RUN_REPAIR = (
    "Repair: launch it with the Monitor tool (ToolSearch select:Monitor, then Monitor with command "
    "`attend run` and timeout_ms 600000); re-arm it the same way when it expires."
)
PATH_REPAIR = (
    "Repair: use the attend verb that does it: `attend inbox` (or mcp__attend__inbox) to read messages, "
    "`attend status` or `attend peers` for state, `attend send` / `attend reply` to write."
)


class Refusal:
    """A refusal: its reason and repair lines. (Not a dataclass: importing dataclasses costs ~15 ms.)"""

    __slots__ = ("reason", "repair")

    def __init__(self, reason: str, repair: str) -> None:
        self.reason = reason
        self.repair = repair


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def protected_roots(env: Mapping[str, str]) -> list[str]:
    """The spool and config folders, in both their written and symlink-resolved forms."""
    home = _home(env)
    found = {layout.default_root(env), layout.config_root(env), os.path.join(home, ".cache", "attend")}
    found.add(os.path.join(home, ".config", "attend"))
    return sorted(found | {os.path.realpath(r) for r in found})


class Guard:
    def __init__(self, env: Mapping[str, str], cwd: str) -> None:
        self.env = env
        self.cwd = cwd
        self.roots = protected_roots(env)

    # ------------------------------------------------------------------ paths

    def expand(self, word: str, cwd: str) -> str:
        if word == "~" or word.startswith("~/"):
            word = _home(self.env) + word[1:]
        if "$" in word:
            word = _expand_vars(word, self.env)
        for i, ch in enumerate(word):
            if ch in GLOB_CHARS:
                # The static part before the first glob character is where the pattern reads.
                word = word[:i]
                word = word if word.endswith("/") or not word else os.path.dirname(word)
                break
        if not word:
            return ""
        return os.path.normpath(os.path.join(cwd, word))

    def protected(self, path: str) -> str | None:
        """The protected root that ``path`` (absolute) lies in, itself or through symlinks."""
        for candidate in (path, os.path.realpath(path)):
            for root in self.roots:
                if candidate == root or candidate.startswith(root + os.sep):
                    return root
        return None

    def check_word(self, word: str, cwd: str) -> str | None:
        if not word or (word.startswith("-") and "=" not in word):
            return None
        parts = [word]
        if "=" in word:
            parts.append(word.split("=", 1)[1])
        for part in parts:
            if root := self.glob_reaches(part, cwd):
                return root
            path = self.expand(part, cwd)
            if path and (root := self.protected(path)):
                return root
        return None

    def glob_reaches(self, word: str, cwd: str) -> str | None:
        """The protected root a glob pattern can match, itself or below (``~/.cache/*/rooms``,
        ``~/.cache/att*``): compared component by component, as the shell expands it."""
        if word == "~" or word.startswith("~/"):
            word = _home(self.env) + word[1:]
        if "$" in word:
            word = _expand_vars(word, self.env)
        if not any(ch in word for ch in GLOB_CHARS):
            return None
        pattern = os.path.normpath(os.path.join(cwd, word)).split(os.sep)
        for root in self.roots:
            parts = root.split(os.sep)
            if len(pattern) < len(parts) and "**" not in pattern:
                continue  # the pattern stops above the root: it names no path inside it
            for have, want in zip(parts, pattern, strict=False):
                if want == "**":
                    return root
                if have.startswith(".") and not want.startswith("."):
                    break  # a shell glob does not match a leading dot
                if not fnmatch.fnmatchcase(have, want):
                    break
            else:
                return root
        return None

    # ------------------------------------------------------------------ tools

    def check(self, tool: str, tool_input: Mapping[str, object]) -> Refusal | None:
        if tool == "Monitor" or (tool == "Bash" and "timeout_ms" in tool_input):
            return None
        if tool == "Bash":
            command = tool_input.get("command")
            return self.check_shell(command, self.cwd, 0) if isinstance(command, str) else None
        if tool in FILE_KEYS:
            return self._file_refusal(tool, [tool_input.get(FILE_KEYS[tool])])
        if tool in ("Glob", "Grep"):
            base = tool_input.get("path")
            base = base if isinstance(base, str) and base else self.cwd
            words: list[object] = [base]
            pattern = tool_input.get("pattern" if tool == "Glob" else "glob")
            if isinstance(pattern, str) and pattern:
                words.append(os.path.join(self.expand(base, self.cwd) or self.cwd, pattern))
            return self._file_refusal(tool, words)
        return None

    def _file_refusal(self, tool: str, words: list[object]) -> Refusal | None:
        for word in words:
            if isinstance(word, str) and (root := self.check_word(word, self.cwd)):
                return Refusal(f"{tool} reaches inside attend's own folder {root} ({word}).", PATH_REPAIR)
        return None

    def check_shell(self, command: str, cwd: str, depth: int) -> Refusal | None:
        if depth > MAX_DEPTH:
            return None
        for seg in _segments(_tokens(command)):
            words = _command_words(seg)
            if not words:
                continue
            name = os.path.basename(words[0])
            if name in SHELLS:
                inner = _dash_c(words[1:])
                if inner is not None:
                    if refusal := self.check_shell(inner, cwd, depth + 1):
                        return refusal
                    continue
            if name == "eval":
                if refusal := self.check_shell(" ".join(words[1:]), cwd, depth + 1):
                    return refusal
                continue
            if name == "attend":
                sub = next((w for w in words[1:] if not w.startswith("-")), "")
                if sub == "run":
                    return Refusal(RUN_REASON, RUN_REPAIR)
                continue  # attend's own commands are exempt from the folder check
            for word in seg:
                # Command substitution inside a quoted argument still runs.
                for opener in ("$(", "`"):
                    if opener in word:
                        inner = word.split(opener, 1)[1].rstrip(")`")
                        if refusal := self.check_shell(inner, cwd, depth + 1):
                            return refusal
                if root := self.check_word(word, cwd):
                    return Refusal(f"this command reaches inside attend's own folder {root} ({word}).", PATH_REPAIR)
            if name == "cd" and len(words) > 1:
                cwd = self.expand(words[1], cwd) or cwd
        return None


def _expand_vars(word: str, env: Mapping[str, str]) -> str:
    out = []
    i = 0
    while i < len(word):
        if word[i] == "$":
            j = i + 1
            braced = word[j : j + 1] == "{"
            if braced:
                j += 1
            k = j
            while k < len(word) and (word[k].isalnum() or word[k] == "_"):
                k += 1
            name = word[j:k]
            if name and (not braced or word[k : k + 1] == "}"):
                out.append(env.get(name, ""))
                i = k + 1 if braced else k
                continue
        out.append(word[i])
        i += 1
    return "".join(out)


def _tokens(command: str) -> list[str]:
    text = command.replace("\n", " ; ").replace("`", " ` ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        # Unbalanced quotes: the shell would refuse it too; look at the plain words anyway.
        return text.split()


def _segments(tokens: list[str]) -> Iterator[list[str]]:
    seg: list[str] = []
    for tok in tokens:
        if tok in SEPARATORS or tok == "`" or (tok.endswith("$") and tok.rstrip("$") == ""):
            if seg:
                yield seg
            seg = []
        else:
            seg.append(tok)
    if seg:
        yield seg


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.replace("_", "a").isalnum() and not name[0].isdigit()


def _command_words(seg: list[str]) -> list[str]:
    """The words from the command position on: assignments, prefix words and their options skipped."""
    i = 0
    while i < len(seg):
        word = seg[i]
        if _is_assignment(word) or word.endswith("=$"):
            i += 1
            continue
        name = os.path.basename(word)
        if name not in PREFIXES:
            break
        takes_arg = PREFIXES[name]
        i += 1
        while i < len(seg) and (seg[i].startswith("-") or (name == "env" and _is_assignment(seg[i]))):
            i += 2 if seg[i] in takes_arg else 1
        if name == "timeout" and i < len(seg):
            i += 1  # the duration
        if name == "nice" and i < len(seg) and seg[i].lstrip("-").isdigit():
            i += 1
    return [w for w in seg[i:] if w not in ("<", ">", ">>", "<<", "<<<", ">&", "&>")]


def _dash_c(args: list[str]) -> str | None:
    for i, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return args[i + 1] if i + 1 < len(args) else None
        if not arg.startswith("-"):
            return None
    return None


def decide(payload: object, env: Mapping[str, str]) -> Refusal | None:
    if not isinstance(payload, dict):
        raise ValueError("the hook payload is not a JSON object")
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if not isinstance(tool, str) or not isinstance(tool_input, dict):
        return None
    cwd = safejson.text_field(payload, "cwd")
    guard = Guard(env, cwd if cwd and os.path.isabs(cwd) else os.getcwd())
    return guard.check(tool, tool_input)


def main() -> int:
    try:
        refusal = decide(safejson.loads(sys.stdin.read() or "null"), os.environ)
    except Exception as e:  # a bug or bad input degrades to no guard, never to a blocked session
        print(f"{TAG} internal error, allowing: {type(e).__name__}: {e}".replace("\n", " "), file=sys.stderr)
        return 0
    if refusal is None:
        return 0
    print(f"{TAG} refused: {refusal.reason}", file=sys.stderr)
    print(f"{TAG} {refusal.repair}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
