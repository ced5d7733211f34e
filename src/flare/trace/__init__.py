"""flare.trace."""
