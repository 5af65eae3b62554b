"""The human's seat, as both of its screens compute it without drawing: `attend chat` (attend/chat/, in
the terminal) and `attend web` (attend/web/, in the browser). Over the verbs (attend/verbs/chat.py
lists the rooms and reads them), never below them, and free of any screen's framework.

- ``threads``: how a room's messages fold into threads, and how a typed line is addressed.
- ``compose``: a typed line sent through the send and reply verbs, as `attend send` would.
- ``live``: the thread that wakes on the spool's inotify events and hands over each new record.
"""
