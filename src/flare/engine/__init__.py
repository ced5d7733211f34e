"""flare.engine."""
