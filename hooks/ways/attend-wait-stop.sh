#!/bin/sh
# asyncRewake Stop hook: wait, costing no model turn, and wake the idle session when a message lands.
# Exit 2 wakes the session with our stderr, so only the waiter itself may exit 2 (when it shows messages).
attend=@ATTEND@
[ -x "$attend" ] || attend=$(command -v attend) || {
    echo "attend: the waiting Stop hook finds no attend (not at the path attend install recorded, nor on PATH); run attend doctor" >&2
    exit 0
}
exec "$attend" wait --hook
