"""What the front (attend.mcp.front) hands the server (attend.mcp.server) when the server takes the
wire over: below both, so neither imports the other for it (the front loads the server; the server
never imports the front). Standard library only, as the front is."""

from __future__ import annotations

# A frame to give the server again at the handover, and the answer of its own to drop:
# ("id", <request id>) for a response, ("ack", <subscription id>) for a listen's acknowledgement.
Replay = tuple[bytes, "tuple[str, int | str] | None"]
