#!/bin/sh
# SessionStart hook (matcher compact): after a compaction, re-present the unanswered threads the model
# was shown, and the reheat. Prints one additionalContext, or nothing; never fails the session's start.
# `attend install` writes the absolute path of the attend that ran it here, so a venv off PATH works.
attend=@ATTEND@
[ -x "$attend" ] || attend=$(command -v attend) || {
    echo "attend: the compact hook finds no attend (not at the path attend install recorded, nor on PATH); run attend doctor" >&2
    exit 0
}
"$attend" recall --hook
exit 0
