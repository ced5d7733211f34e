"""flare.cli."""
