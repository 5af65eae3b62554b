"""`attend web`: the human's seat in a browser, a page served on 127.0.0.1 over the same spool, live
(the fourth frontend, beside the CLI, the MCP server and `attend chat`). Only this package imports
starlette and uvicorn (sse_starlette too, were it used: the stream is written by hand), and only
`attend web` imports this package (import-linter's contracts in pyproject.toml hold both).

- ``serve``: binds the port, prints the address, runs the server until Ctrl+C.
- ``server``: the routes, the guard (token, cookie, origin, Content-Security-Policy) and the live stream.
- ``static/``: the page, its script and its style (package data; no CDN, nothing from elsewhere).
"""
