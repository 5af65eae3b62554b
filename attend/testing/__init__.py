"""The stand-in Claude session (a real process with a real session record) and the demo built on it."""
