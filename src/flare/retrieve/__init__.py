"""flare.retrieve."""
