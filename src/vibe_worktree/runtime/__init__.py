"""Each session its own running app: its ports, its environment, its processes."""
