"""Every requirement code cited in the code (M2, C1, O3, E2 …) is defined in docs/requirements.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = re.compile(r"\b([MCOE](?:10|[1-9]))\b")
DEFINED = re.compile(r"^\| \*\*([MCOE]\d+)\*\* \|", re.MULTILINE)


def _cited() -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    files = [p for d in ("src", "tests", "benchmarks") for p in (ROOT / d).rglob("*.py")]
    files += [p for p in (ROOT / "docs").glob("*.md") if p.name != "requirements.md"]
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for code in CODE.findall(line):
                where.setdefault(code, []).append(f"{path.relative_to(ROOT)}:{number}")
    return where


def test_every_cited_code_is_defined() -> None:
    defined = set(DEFINED.findall((ROOT / "docs" / "requirements.md").read_text(encoding="utf-8")))
    cited = _cited()
    assert {"M1", "M2", "C1", "C6", "O2", "E2"} <= cited.keys()  # the scan does find citations
    missing = {code: places[:3] for code, places in cited.items() if code not in defined}
    assert not missing, f"define these in docs/requirements.md: {missing}"


def test_no_comment_points_at_a_spec_outside_the_repository() -> None:
    stale = [str(p.relative_to(ROOT)) for d in ("src", "tests", "benchmarks") for p in (ROOT / d).rglob("*.py")
             if re.search(r"SPEC [MCOE]\d", p.read_text(encoding="utf-8"))]  # fmt: skip
    assert not stale, f"cite the code alone (defined in docs/requirements.md): {stale}"
