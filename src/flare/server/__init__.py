"""The flare HTTP server: cited answers as JSON or server-sent events, an OpenAI-compatible chat
endpoint, per-caller permissions from trusted state, traces, metrics and a trace viewer.

Needs the ``server`` extra: ``pip install 'flare-rag[server]'``.
"""

from flare.server.app import create_app
from flare.server.auth import KeyStore, Principal
from flare.server.limits import Limits

__all__ = ["KeyStore", "Limits", "Principal", "create_app"]
