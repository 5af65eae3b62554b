#!/bin/sh
# Pre-tool hook of the edit tools: when the file is under another live session's lease, tell the model
# in one line who holds it and how to reach them (or refuse the edit, under leases.enforce: refuse).
# No output otherwise. Fails open: a missing attend, or any failure, lets the edit through.
# `attend install` writes the absolute path of the attend that ran it here, so a venv off PATH works.
attend=@ATTEND@
[ -x "$attend" ] || attend=$(command -v attend) || exit 0
exec "$attend" hook edit
