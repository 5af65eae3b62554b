"""Setting attend up: the three-way merge into Claude Code's configuration, the guard, the packaged data."""
