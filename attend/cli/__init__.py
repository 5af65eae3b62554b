"""The click frontend (``attend.cli.app``), the console entry and the click-free send fast path.

This package's own import is free: ``attend.cli.entry`` routes the hot command lines before click loads.
"""
