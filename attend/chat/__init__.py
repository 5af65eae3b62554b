"""`attend chat`: the human's seat at the table, a Textual app over the same spool (the third frontend,
beside the CLI and the MCP server). Only this package imports textual, and only `attend chat` imports
this package (import-linter's contracts in pyproject.toml, and tests/test_chat.py, hold both).

- ``app``: the screen (rooms, conversation, peers, compose) and its keys.
- ``live``: the thread that wakes on the spool's inotify events and feeds the screen.
- ``threads``: how a room's messages fold into threads, and how a typed line is addressed.
"""
