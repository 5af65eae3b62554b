#!/bin/sh
# Gemini CLI's SessionStart hook: record the session for the gemini process, so its shell tools and
# `attend mcp` find it. exec: attend's parent must be the gemini process itself.
attend=@ATTEND@
[ -x "$attend" ] || attend=$(command -v attend) || {
    echo "attend: the SessionStart hook finds no attend (not at the path attend install recorded, nor on PATH); run attend doctor" >&2
    exit 0
}
exec "$attend" hook gemini-start
