#!/bin/sh
# Stop hook: deliver pending attend messages at turn end. Short on purpose: this path reaches the model.
command -v attend >/dev/null 2>&1 || exit 0
attend inbox --drain --format hook
# Exit 2 would make Claude Code re-prompt the model with our stderr; the drain never means that.
rc=$?; [ "$rc" -eq 2 ] && exit 1; exit "$rc"
