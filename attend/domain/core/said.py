"""What this process has already said on stderr, so each warning is said once however often it comes
up (the MCP server resolves its caller on every call; a config file that does not apply is read by
many verbs)."""

from __future__ import annotations

# Identity notes (an offered id that was ignored) and config warnings written to stderr; the CLI skips
# them in a verb's warnings.
REPORTED: set[str] = set()
