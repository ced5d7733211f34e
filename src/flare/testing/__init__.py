"""Test kit shipped with flare: a scripted LM and an in-memory retriever."""
