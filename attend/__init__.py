"""attend: a message bus for AI coding-agent sessions that share a machine."""

__version__ = "0.1.0"
