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
    return _ends(text, final, lines, _Scan())


class _Scan:
    """Where a scan of a growing text resumes: every candidate before ``pos`` was decided for good.

    ``start`` is where the current sentence began. Only a scan with ``lines=True`` keeps ``pos``
    meaningful (with ``lines=False`` a newline's decision depends on the text after it).
    """

    __slots__ = ("pos", "start")

    def __init__(self) -> None:
        self.pos = 0
        self.start = 0


def _ends(text: str, final: bool, lines: bool, scan: _Scan) -> Iterator[int]:
    # Every decision on a candidate that ends before the end of the text looks only at the text
    # up to one character past it, so appending text never changes it: a scan may resume at
    # ``scan.pos`` (the first candidate left undecided, or the end of the text).
    n = len(text)
    for m in _CANDIDATE.finditer(text, scan.pos):
        i, j = m.start(), m.end()
        if m.group("nl") is not None:
            scan.pos = j
            if not _CONTENT.search(text, scan.start, i):
                scan.start = i  # only blank space so far: never search it again (linear time)
            elif lines or _BLANK_REST.match(text, j):
                yield i
                scan.start = i
            continue
        run = m.group()
        start = scan.start
        at_once = (
            any(c in _AT_ONCE for c in run)
            or (run[0] in "!?" and i > start and is_wide(text[i - 1]))
            or (run == "." and i > start and j < n and bool(HAN_RE.match(text[j])) and not text[i - 1].isspace())
        )
        if at_once:
            scan.pos = j
            yield j
            scan.start = j
            continue
        if j >= n:
            scan.pos = i  # the run may grow, or what follows decide it
            if not final:
                return
            break
        scan.pos = j
        if text[j].isspace() and not (run[0] == "." and _abbreviated(text, i, start)):
            yield j
            scan.start = j
    else:
        scan.pos = n  # nothing after the last candidate can start one: a mark or newline would have
    if final and _CONTENT.search(text, scan.start):
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


class SentenceWatch:
    """:func:`ends_sentence` for a text asked after every generated token, in time linear in the text.

    Each call with the text so far looks only at what was added since the call before (and at
    the candidate end that was still undecided); a text that does not extend the one before
    starts the scan again. Answers exactly as :func:`ends_sentence` would.

        >>> watch = SentenceWatch()
        >>> [watch(t) for t in ("He was 5", "He was 5.", "He was 5.5 ft.", "He was 5.5 ft. Next")]
        [False, False, False, True]
    """

    __slots__ = ("_found", "_scan", "_text")

    def __init__(self) -> None:
        self._text = ""
        self._scan = _Scan()
        self._found = False

    def __call__(self, text: str) -> bool:
        if not text.startswith(self._text):
            self._scan, self._found = _Scan(), False
        self._text = text
        if not self._found:
            # once a sentence ended, a longer text still holds it: every decision was final
            self._found = next(_ends(text, False, True, self._scan), None) is not None
        return self._found


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
