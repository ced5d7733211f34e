"""flare.query."""
