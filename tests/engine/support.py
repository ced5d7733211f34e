"""Shared pieces for engine tests: a bare template and a small corpus about Versace."""

from __future__ import annotations

from flare.engine.prompts import PromptTemplate
from flare.types import Passage

BARE = PromptTemplate("plain", "", "", "\nAnswer:", ("\n",))

DOCS = [
    Passage("v1", "Gianni Versace founded the fashion house Versace in Milan in 1978.", "Versace",
            {"acl": ["public"], "year": 1978}),
    Passage("v2", "Gianni Versace was shot dead outside his Miami Beach mansion on 15 July 1997.",
            "Gianni Versace", {"acl": ["public"], "year": 1997}),
    Passage("s1", "Secret: the designer's will left the company to his niece Allegra.",
            "Company will", {"acl": ["legal"], "year": 1997}),
]


def has_docs(prompt: str) -> bool:
    return "Search results:" in prompt
