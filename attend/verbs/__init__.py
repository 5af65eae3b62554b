"""Verbs: one module each, a typed request and result, one description string, and no printing.

Frontends (cli, mcp_server) parse input into a request, call ``run`` and render the result.
"""
