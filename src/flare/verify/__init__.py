"""Checks on what the answer claims: which passages a sentence cites."""
