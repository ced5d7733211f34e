"""No import cycles in flare, counting imports inside functions (the shared checker, when present)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKER = ROOT.parent / "shared" / "tools" / "import_cycles.py"


@pytest.mark.skipif(not CHECKER.is_file(), reason=f"{CHECKER} is not beside this checkout")
def test_no_module_imports_itself_through_others() -> None:
    out = subprocess.run([sys.executable, str(CHECKER), str(ROOT / "src" / "flare"), "--lazy"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0 and "no import cycles" in out.stdout, out.stdout + out.stderr
