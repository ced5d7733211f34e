"""Traces: a versioned record of every decision, and where to send it."""
