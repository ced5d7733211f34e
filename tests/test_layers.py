"""Imports only go down the layers drawn in docs/architecture.md (module level and in functions)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "flare"

LEAVES = {"text", "types", "errors", "config", "config_file"}
PARTS = {"lm", "retrieve", "query", "verify", "trace"}
BELOW_ENGINE = LEAVES | PARTS | {"engine"}
ALLOWED: dict[str, set[str]] = {
    "text": set(),
    "types": {"text"},
    "errors": set(),
    "config": {"errors", "text"},
    "config_file": {"config", "errors", "text"},
    "lm": LEAVES | {"testing"},
    "retrieve": LEAVES,
    "query": LEAVES | {"lm"},
    "verify": LEAVES,
    "trace": LEAVES,
    "testing": LEAVES | {"lm", "retrieve"},
    "engine": LEAVES | PARTS,
    "evaluate": BELOW_ENGINE,
    "server": BELOW_ENGINE,
    "integrations": BELOW_ENGINE,
    "cli": BELOW_ENGINE | {"evaluate", "server"},
}
LAZY_ONLY = {("lm", "testing"), ("cli", "server")}  # allowed inside a function, never at import time


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "flare"


def _imports() -> list[tuple[str, str, bool, str]]:
    """(from package, to package, at module level?, where) for every flare import in src/flare."""
    out = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        here = _package(".".join(rel.parts))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name == "flare" or name.startswith("flare."):
                    there = _package(name)
                    if there != here:
                        out.append((here, there, id(node) in top, f"{path.relative_to(SRC)}:{node.lineno}"))
    return out


def test_every_import_goes_down_the_layers() -> None:
    found = _imports()
    assert any(src == "engine" and dst == "retrieve" for src, dst, _, _ in found)  # the scan sees imports
    wrong = [f"{where}: {src} imports {dst}" for src, dst, _, where in found
             if src in ALLOWED and dst not in ALLOWED[src]]  # fmt: skip
    assert not wrong, "\n".join(wrong)


def test_lazy_edges_stay_lazy() -> None:
    eager = [f"{where}: {src} imports {dst} at import time" for src, dst, top, where in _imports()
             if top and (src, dst) in LAZY_ONLY]  # fmt: skip
    assert not eager, "\n".join(eager)


def test_every_package_has_a_rule() -> None:
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in SRC.glob("*.py")} - {"__init__", "__main__"}
    assert packages | modules <= ALLOWED.keys() | {"viewer", "data"}, (packages | modules) - ALLOWED.keys()
