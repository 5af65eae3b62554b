"""The words every other part uses: the envelope and its framing, ids, room names and the closed set of
delivery outcomes. Imports nothing else of the domain."""
