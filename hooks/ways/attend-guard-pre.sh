#!/bin/sh
# attend-guard-pre.sh: PreToolUse guard for attend. INTERIM: remove it once the attend MCP frontend
# is every agent session's default (docs/architecture/settings.md). Shipped deactivated; `attend install`
# never wires it. Wire it by hand (docs/install.md) under matcher "*": under matcher "Bash" the
# client presents a Monitor call as a Bash call, and the guard would refuse `attend run` there too.
#
# Closed list (the checks live in attend/setup/guard.py):
#   1. `attend run` started from the Bash tool        -> launch it with the Monitor tool
#   2. reading, editing or writing inside attend's spool or config folders through Bash, Read,
#      Edit, MultiEdit, Write, NotebookEdit, Glob or Grep -> use the attend verb that does it
# Contract: exit 0 (allow) or 2 (refuse, one reason line and one repair line on stderr). Any
# internal failure, a missing attend or interpreter included, allows with one stderr line.

# attend's own interpreter is the one its launcher names, so a pipx or venv install works even
# where the system python3 cannot import attend. The launcher is the one `attend install` recorded
# on the next line, else the one on PATH.
py=python3
bin=@ATTEND@
[ -x "$bin" ] || bin=$(command -v attend 2>/dev/null)
if [ -n "$bin" ] && IFS= read -r first < "$bin"; then
    case "$first" in
        '#!'*python*) py=${first#'#!'} ;;
    esac
fi
if ! command -v "${py%% *}" >/dev/null 2>&1; then
    echo "[attend-guard] no interpreter for the guard ($py not found); allowing" >&2
    exit 0
fi
# Unquoted on purpose: a launcher may read "#!/usr/bin/env python3". Its stderr is held so that a
# crash (a traceback) still comes out as the contract's one line.
err=$($py -I -m attend.setup.guard 2>&1 >/dev/null)
rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ]; then
    [ -n "$err" ] && printf '%s\n' "$err" >&2
    exit "$rc"
fi
echo "[attend-guard] internal failure (exit $rc, interpreter $py); allowing" >&2
exit 0
