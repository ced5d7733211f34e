"""Evaluation: datasets, method specs, metrics, the resumable harness and reports (``flare eval``)."""
