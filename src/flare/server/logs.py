"""Structured logs: one JSON object per line, with the fields a log pipeline can index.

Log records of the ``flare.server`` logger carry their fields in ``extra={"fields": {...}}``.
Questions, answers and API keys are never logged: a log line names the principal, the route,
the status, timings and counts, so logs can be shared without leaking documents.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any


class JsonFormatter(logging.Formatter):
    """Formats a record as ``{"ts", "level", "logger", "msg", ...fields}`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(level: str = "info") -> None:
    """Send ``flare.server`` logs as JSON lines to stderr (called by ``flare serve``)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("flare.server")
    logger.handlers[:] = [handler]
    logger.setLevel(level.upper())
    logger.propagate = False
