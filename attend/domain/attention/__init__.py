"""What reaches a model and when: the order and budget of what a conduit shows, the MCP trailer,
keepwarm, and the reheat of the judgment layer."""
