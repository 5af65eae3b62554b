"""Verbs: one module each, a typed request and result, one description string, and no printing.

Frontends (attend.cli, attend.mcp) parse input into a request, call ``run`` and render the result.
"""
