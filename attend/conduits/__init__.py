"""The conduits: how inbound messages reach a model (the sensor loop, the Stop-hook drain) and the operator (tail)."""
