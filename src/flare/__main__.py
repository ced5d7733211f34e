"""``python -m flare`` is the ``flare`` command."""

from flare.cli.main import main

main()
