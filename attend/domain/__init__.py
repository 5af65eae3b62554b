"""The domain: what a message, a session, a channel and a room are, over the gate (``attend.spool``)."""
