"""An ASGI app served by uvicorn on 127.0.0.1 in a background thread, for tests and benchmarks.

Example::

    with ThreadedServer(app) as server:
        httpx.get(f"{server.root}/healthz")
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any, Literal, Self

import uvicorn

__all__ = ["ThreadedServer"]


class ThreadedServer:
    """Serves ``app`` on 127.0.0.1 (``port`` 0: a free one); ``root`` is its URL once started."""

    def __init__(self, app: Any, *, port: int = 0, lifespan: Literal["on", "off"] = "on", name: str = "server") -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                lifespan=lifespan, access_log=False)  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name=name, daemon=True)
        self.name = name
        self.root = ""

    def start(self) -> Self:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the {self.name} did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.root = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
