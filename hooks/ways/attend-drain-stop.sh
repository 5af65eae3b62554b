#!/bin/sh
# Stop hook: deliver pending attend messages at turn end. Short on purpose: this path reaches the model.
# `attend install` writes the absolute path of the attend that ran it here, so a venv off PATH works.
attend=@ATTEND@
[ -x "$attend" ] || attend=$(command -v attend) || {
    echo "attend: the Stop hook finds no attend (not at the path attend install recorded, nor on PATH); run attend doctor" >&2
    exit 0
}
"$attend" inbox --drain --format hook
# Exit 2 would make Claude Code re-prompt the model with our stderr; the drain never means that.
rc=$?; [ "$rc" -eq 2 ] && exit 1; exit "$rc"
