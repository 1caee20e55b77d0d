"""One detector per module; `engine.redact.registry` maps their names to instances."""
