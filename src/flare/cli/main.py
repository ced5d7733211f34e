"""The ``flare`` command: one small module per subcommand, errors turned into one-line hints."""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

import click

from flare.cli.ask_cmd import ask
from flare.cli.demo_cmd import demo
from flare.cli.eval_cmd import eval_command
from flare.cli.index_cmd import index
from flare.cli.serve_cmd import serve
from flare.errors import FlareError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="flare-rag")
def cli() -> None:
    """FLARE: answers that look ahead and retrieve only when the model is unsure."""


cli.add_command(index)
cli.add_command(ask)
cli.add_command(demo)
cli.add_command(serve)
cli.add_command(eval_command)


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that cleanup runs (a half-built index is deleted)."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not interrupt the cleanup
    raise Terminated


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and turn every :class:`FlareError` into a one-line message."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)  # `flare serve`: uvicorn installs its own
    try:
        cli.main(args=argv, prog_name="flare", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("flare: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except FlareError as exc:
        hint = f" (hint: {exc.hint})" if exc.hint else ""
        click.echo(f"flare: error: {exc.message}{hint}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("flare: interrupted", err=True)
        sys.exit(130)
    except Terminated:
        click.echo("flare: terminated", err=True)
        sys.exit(143)
