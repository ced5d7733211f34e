"""Rebuild the word lists that keep the world's names invented (see :mod:`flare.evaluate.world.names`).

``data/world/real_words.txt`` holds every word of the bundled pools that the name grammar
could produce; ``data/world/common_words.txt`` the words written in lower case at least
:data:`~flare.evaluate.world.names.MIN_COUNT_COMMON` times. A maintainer's tool, run after the
pools change::

    python -m flare.evaluate.world.wordlists /work/shared/data

It lives apart from :mod:`~flare.evaluate.world.names` (which the package imports) so that
``python -m`` runs it without importing it twice.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from flare.evaluate.world.names import GRAMMAR, MIN_COUNT_COMMON

LISTS = Path(__file__).resolve().parents[2] / "data" / "world"
"""Where the lists live: ``src/flare/data/world``, read back with ``importlib.resources``."""

def scan_pools(root: Path) -> tuple[list[str], list[str]]:
    """The two word lists from every ``corpus.jsonl`` under ``root``: (real words, common words)."""
    grammar: set[str] = set()
    lower: Counter[str] = Counter()
    for path in sorted(root.glob("*/corpus.jsonl")):
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                for w in re.findall(r"[A-Za-z]+", f"{row.get('title', '')} {row['text']}"):
                    low = w.lower()
                    if GRAMMAR.match(low):
                        grammar.add(low)
                    if w == low:
                        lower[low] += 1
    common = sorted(w for w, n in lower.items() if n >= MIN_COUNT_COMMON)
    return sorted(grammar), common


def _write_lists(root: Path) -> None:
    real, common = scan_pools(root)
    out = LISTS
    out.mkdir(parents=True, exist_ok=True)
    for name, items in (("real_words.txt", real), ("common_words.txt", common)):
        tmp = out / f".{name}.tmp"
        tmp.write_text("\n".join(items) + "\n", encoding="utf-8")
        tmp.replace(out / name)
        print(f"wrote {len(items)} words to {out / name}")


def main(argv: list[str]) -> int:
    """Rebuild both lists from ``argv[0]``, a folder of ``<name>/corpus.jsonl``."""
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python -m flare.evaluate.world.wordlists DATA_ROOT (a folder of <name>/corpus.jsonl)",
              file=sys.stderr)  # fmt: skip
        return 2
    _write_lists(Path(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
