#!/bin/sh
# Codex CLI's Stop hook: deliver pending attend messages at turn end (a block), else start the waiter
# that wakes the idle thread through `codex queue`. `attend install` writes attend's path here.
attend=@ATTEND@
[ -x "$attend" ] || attend=$(command -v attend) || {
    echo "attend: the Stop hook finds no attend (not at the path attend install recorded, nor on PATH); run attend doctor" >&2
    exit 0
}
"$attend" hook codex-stop
rc=$?; [ "$rc" -eq 2 ] && exit 1; exit "$rc"
