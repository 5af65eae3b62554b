"""The MCP frontend, ``attend mcp``: the only package that imports the mcp SDK and pydantic."""
