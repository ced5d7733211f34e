"""Sentence boundaries for English and Chinese, on finished text and on text still being generated.

One rule set serves the generator (which stops drafting as soon as its first sentence is known
to be complete), the chunker (which cuts documents into passages at sentence ends) and everyone
who splits an answer into sentences, so a sentence the engine commits is a sentence the chunker
would cut at.

A sentence ends after a run of sentence marks (:data:`MARKS`) and any closing quotes or brackets
(:data:`CLOSERS`) when

* the run holds a Chinese or full-width mark (``。！？``) or an ellipsis (``…``): at once;
* the run starts with ``!`` or ``?`` written straight after a wide character ("好!"): at once;
* the run is one ``.`` written straight between a word and a Chinese character ("IP68.它");
* otherwise (English ``.!?``) whitespace follows, or the text is finished, and the period is not
  the end of an abbreviation (:data:`ABBREVIATIONS`, "Dr.", "e.g.") or of a letter written as
  an initial or in a dotted run ("J. K. Rowling", "U.S."). So "5.5" never splits, and a period at
  the very end of a partial text is not yet a boundary: the next token may turn it into "5.5".

Newlines: for generated text (``lines=True``) every newline ends a sentence; for documents
(``lines=False``, the chunker) only a blank line does, since files are often wrapped mid-sentence.
That is the one place the two uses differ. ``；`` and ``，`` join clauses of one sentence and
never end it.

The abbreviations and closers are the union of those the generator and the chunker used before
they shared this module (the generator's 55 abbreviations plus "cf"; closers ``}`` and ``】``
both), and a run of marks ("？！", "……", "。.") ends one sentence, not several.

    >>> split_sentences("Dr. Smith moved to the U.S. in 1999. He was 5.5 ft tall! 他来了。好。")
    ['Dr. Smith moved to the U.S. in 1999.', 'He was 5.5 ft tall!', '他来了。', '好。']
    >>> first_sentence_end("The answer is 5.") is None, first_sentence_end("The answer is 5. Next")
    (True, 16)
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from flare.text.scripts import HAN_RE, is_wide

ABBREVIATIONS = frozenset(
    [
        "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "etc", "inc", "ltd", "co", "corp", "fig", "no",
        "vol", "pp", "ed", "eds", "al", "approx", "dept", "est", "gen", "gov", "col", "lt", "sgt", "capt", "rev",
        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "e.g", "i.e", "u.s",
        "u.k", "u.n", "a.m", "p.m", "ph.d", "b.a", "m.a", "d.c", "cf",
    ]
)  # fmt: skip
"""Words (lower case, without their last period) whose period does not end a sentence."""

CLOSERS = "\"'”’)]}）】」』"
"""Closing quotes and brackets that belong to the sentence they follow ("He said "stop."")."""

MARKS = ".!?…。！？"
"""Characters that can end a sentence."""

_AT_ONCE = "。！？…"
_MARK = f"[{re.escape(MARKS)}]"
# A newline, or a mark followed by any run of marks and closers.
_CANDIDATE = re.compile(rf"(?P<nl>\n)|{_MARK}[{re.escape(MARKS + CLOSERS)}]*")
_BLANK_REST = re.compile(r"[^\S\n]*\n")
_CONTENT = re.compile(r"\S")
_DOTTED = re.compile(r"[a-z](?:\.[a-z])*")  # "u.s", "e.g", "j": single letters, dotted
_WORD_CHAR = re.compile(r"[A-Za-z.]")
_LONGEST_WORD = 12  # longer than any abbreviation or dotted run we recognise


def sentence_ends(text: str, *, final: bool = True, lines: bool = True) -> Iterator[int]:
    """Offsets just past each sentence of ``text``, in order.

    With ``final=False`` the text is still being generated: a sentence whose end is not yet
    certain (an English mark at the very end) stops the iteration. With ``final=True`` the end
    of the text ends the last sentence, if it holds anything. ``lines`` says whether a single
    newline ends a sentence (generated text) or only a blank line does (documents).
    """
    n = len(text)
    start = 0  # where the current sentence began
    for m in _CANDIDATE.finditer(text):
        i, j = m.start(), m.end()
        if m.group("nl") is not None:
            if not _CONTENT.search(text, start, i):
                start = i  # only blank space so far: never search it again (linear time)
            elif lines or _BLANK_REST.match(text, j):
                yield i
                start = i
            continue
        run = m.group()
        at_once = (
            any(c in _AT_ONCE for c in run)
            or (run[0] in "!?" and i > start and is_wide(text[i - 1]))
            or (run == "." and i > start and j < n and bool(HAN_RE.match(text[j])) and not text[i - 1].isspace())
        )
        if at_once:
            yield j
            start = j
            continue
        if j >= n:
            if not final:
                return
            break
        if text[j].isspace() and not (run[0] == "." and _abbreviated(text, i, start)):
            yield j
            start = j
    if final and _CONTENT.search(text, start):
        yield len(text.rstrip())


def first_sentence_end(text: str, *, final: bool = False) -> int | None:
    """Index just past the end of the first complete sentence in ``text``, or None.

    With ``final=True`` the text is known to be finished, so a sentence mark at the very end
    counts as a boundary (and so does the end of the text itself if it holds any content).
    """
    return next(sentence_ends(text, final=final), None)


def split_sentences(text: str) -> list[str]:
    """All sentences of a finished text, stripped, in order (a newline ends one)."""
    out: list[str] = []
    start = 0
    for end in sentence_ends(text):
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    return out


def ends_sentence(text: str) -> bool:
    """True when ``text`` (being generated) already holds one complete sentence."""
    return first_sentence_end(text) is not None


def _abbreviated(text: str, i: int, start: int) -> bool:
    """Is the period at ``i`` the end of an abbreviation ("Dr.", "e.g.") or of a letter
    ("J. K. Rowling", "U.S.", "option b.")? ``start`` is where the sentence began."""
    k = i
    while k > start and i - k <= _LONGEST_WORD and _WORD_CHAR.match(text[k - 1]):
        k -= 1
    if i - k > _LONGEST_WORD:
        return False  # a long run of letters is a word, not an abbreviation
    word = text[k:i].lstrip(".").lower()
    if not word:
        return False
    return word.strip(".") in ABBREVIATIONS or bool(_DOTTED.fullmatch(word))
