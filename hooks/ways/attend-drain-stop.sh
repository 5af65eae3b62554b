#!/bin/sh
# Stop hook: deliver pending attend messages at turn end. Short on purpose: this path reaches the model.
command -v attend >/dev/null 2>&1 || exit 0
exec attend inbox --drain --format hook
