"""flare.testing."""
