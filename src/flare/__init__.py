"""flare: forward-looking active retrieval augmented generation."""
