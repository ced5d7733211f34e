"""The public API is small, sorted and importable; everything else is private by module."""

from __future__ import annotations

import flare


def test_all_is_sorted_and_importable() -> None:
    assert flare.__all__ == sorted(flare.__all__)
    for name in flare.__all__:
        assert getattr(flare, name) is not None


def test_importing_flare_does_not_load_llama_cpp() -> None:
    import subprocess
    import sys

    code = "import sys, flare; print('llama_cpp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
