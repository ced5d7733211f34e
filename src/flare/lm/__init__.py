"""flare.lm."""
