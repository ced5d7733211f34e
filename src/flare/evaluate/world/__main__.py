"""``python -m flare.evaluate.world --out DIR [--seed N] [--questions N] [--dev N] [--kind long|bridge]``."""

import sys

from flare.evaluate.world import main

sys.exit(main())
