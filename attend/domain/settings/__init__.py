"""What the user sets: the config file and its keys, scenes, the tuned timing keys, and the approvals of
project code (trust)."""
