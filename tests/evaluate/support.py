"""A fake LM that always continues one fixed answer, so every method writes the same text.

:class:`ContinuationLM` reads the answer so far from the end of the prompt and plays the rest of
its target answer from there, whatever documents the prompt holds. Methods run on it can then
differ only in their retrieval steps, which is what the comparison tests check. Prompts built
for ``instruct`` (their exemplars carry ``[Search(`` tags) get the target with search tags,
unless ``[`` is forbidden by the logit bias; prompts for ``decompose`` (exemplars with
``Follow up:``) get the self-ask target.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from flare.lm.base import StopWhen
from flare.testing.scripted import Response, ScriptedLM
from flare.types import Completion, Passage

QUESTION = "Who was the mother of the director of the film Rebecca?"
ANSWER = "Rebecca was directed by Alfred Hitchcock. His mother was Emma Jane Whelan. So the answer is Emma Jane Whelan."
TAGGED = ("[Search(Who directed Rebecca?)] Rebecca was directed by Alfred Hitchcock. "
          "[Search(Hitchcock mother)] His mother was Emma Jane Whelan. So the answer is Emma Jane Whelan.")
SELF_ASK = ("Follow up: Who directed Rebecca? Intermediate answer: Rebecca was directed by Alfred Hitchcock. "
            "Follow up: Who was the mother of Alfred Hitchcock? Intermediate answer: His mother was Emma Jane "
            "Whelan. So the answer is Emma Jane Whelan.")
LOW = {"Hitchcock": 0.3, "mother": 0.2}  # the model is unsure of these words: FLARE looks them up

DOCS = [
    Passage("d1", "Rebecca is a 1940 film directed by Alfred Hitchcock.", "Rebecca (film)"),
    Passage("d2", "Alfred Hitchcock was the son of William Hitchcock and Emma Jane Whelan.", "Alfred Hitchcock"),
    Passage("d3", "Emma Jane Whelan was born in 1863.", "Emma Jane Whelan"),
    Passage("d4", "Vertigo is a film by Alfred Hitchcock.", "Vertigo"),
]

_TAG = re.compile(r"(\[Search\(.*?\)\])")


def _pieces(target: str) -> list[str]:
    """Word pieces of ``target``, each search tag kept whole as one piece."""
    out: list[str] = []
    for part in _TAG.split(" " + target):
        if _TAG.fullmatch(part.strip()):
            out.append(" " + part.strip() if out else part.strip())
        elif part:
            out.extend(ScriptedLM.split(part))
    return [p for p in out if p.strip() or not p.isspace()]


def _squash(text: str) -> str:
    return "".join(text.split())


class ContinuationLM(ScriptedLM):
    """Continues :data:`ANSWER` (or its tagged / self-ask form) from wherever the prompt's answer is."""

    def __init__(self, *, turn_close: str = "\nAnswer:") -> None:
        super().__init__(name="continuation")
        self.turn_close = turn_close
        self._bias: Mapping[str, float] | None = None

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        stop_when: StopWhen | None = None,
        logit_bias: Mapping[str, float] | None = None,
    ) -> Completion:
        self._bias = logit_bias
        return super().complete(prompt, max_tokens=max_tokens, stop=stop, stop_when=stop_when, logit_bias=logit_bias)

    def _find(self, prompt: str) -> Response:
        if self.turn_close not in prompt:  # e.g. an explicit-query question prompt
            return ScriptedLM.sentence(" Who directed Rebecca?")
        header_and_answer = prompt.rsplit(self.turn_close, 1)
        tail = header_and_answer[1]
        so_far = _squash(_TAG.sub("", tail))
        after_tag = tail.rstrip().endswith(")]")  # the prompt shows a search already done
        if "Intermediate answer:" in header_and_answer[0]:
            target = SELF_ASK
        elif "[Search(" in header_and_answer[0]:
            target = TAGGED
        else:
            target = ANSWER
        forbid = (self._bias or {}).get("[", 0.0) < -10
        pieces, written, start = _pieces(target), "", 0
        for i, piece in enumerate(pieces):
            if written == so_far:
                start = i
                break
            if not _TAG.fullmatch(piece.strip()):
                written += _squash(piece)
        else:
            start = len(pieces) if written == so_far else 0
        rest = pieces[start:]
        if after_tag:
            while rest and _TAG.fullmatch(rest[0].strip()):
                rest = rest[1:]
        if forbid:
            rest = [p for p in rest if not _TAG.fullmatch(p.strip())]
        return [(p, LOW.get(p.strip(), 0.95)) for p in rest]
