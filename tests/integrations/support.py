"""A small corpus and a script that retrieves for the question, then for an unsure draft."""

from __future__ import annotations

from flare.testing.scripted import ScriptedLM
from flare.types import Passage

QUESTION = "When was the Quillmere lighthouse built?"
CORPUS = [
    Passage("lh-1", "The Quillmere lighthouse was built in 1847 by the engineer Ada Pemberton.",
            "Quillmere lighthouse", {"acl": ["public"], "year": 1847}),
    Passage("lh-2", "The Quillmere lamp burned whale oil until 1902.", "Quillmere lamp",
            {"acl": ["public"], "year": 1902}),
    Passage("secret-1", "Confidential: the Quillmere lighthouse was built in 1847; its lamp burned whale oil and "
            "it will be sold for 4.2 million crowns.", "Quillmere lighthouse sale", {"acl": ["board"], "year": 2026}),
]  # fmt: skip
CHUNKS = [
    "The Quillmere lighthouse was built in 1847[1].",
    " Its lamp burned whale oil[2].",
    "\n\nSources:\n[1] Quillmere lighthouse (lh-1)\n[2] Quillmere lamp (lh-2)",
]


def script(*, sure_of_coal: bool = False) -> ScriptedLM:
    """First sentence from the question's documents; the second drafted unsure ("coal"), searched
    without that word, and rewritten once the lamp passage is in the prompt. ``sure_of_coal``:
    the draft is confident, so the paper's trigger accepts it unsearched (and unbacked)."""
    lm = ScriptedLM()
    lm.add(lambda p: p.rstrip().endswith("oil."), [])  # the answer is complete
    lm.add("until 1902", ScriptedLM.sentence(" Its lamp burned whale oil."))
    unsure = ScriptedLM.sentence(" Its lamp burned coal. Then", low={} if sure_of_coal else {"coal": 0.1})
    lm.add(lambda p: p.rstrip().endswith("1847."), unsure)
    lm.add("Search results", ScriptedLM.sentence(" The Quillmere lighthouse was built in 1847. Its"))
    return lm.add("", ScriptedLM.sentence(" It was built in 1850.", low={"1850": 0.1}))
