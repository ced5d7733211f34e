"""Language rules shared by every layer: scripts, words, content words, numbers and sentences.

A leaf package (it imports nothing else from flare), so generation, chunking, the query formers,
the judge and the verifier all agree on what a Chinese character, a word, a number and a
sentence are. Each rule has one home:

* :mod:`flare.text.scripts`: Han and wide-character ranges, joining pieces, the language of a text;
* :mod:`flare.text.segment`: words (jieba for Chinese), folding, stopwords, content words (and the
  unsegmented, one-word-per-Han-character :func:`char_content_words`), repeated n-grams;
* :mod:`flare.text.numerals`: numbers written in digits, English words or Chinese numerals;
* :mod:`flare.text.sentences`: sentence boundaries, abbreviations and closers, on finished text
  and on text still being generated.

Everything public is importable from ``flare.text`` itself.

Example::

    >>> [n.value for n in numbers("It took ten days, not 1,642 or 十二 or 二〇二六年.")]
    [10.0, 1642.0, 12.0, 2026.0]
    >>> sorted(content_words("The Angara flows out of Lake Baikal."))
    ['angara', 'baikal', 'flows', 'lake', 'out']
    >>> split_sentences("Dr. Smith left. 他来了。")
    ['Dr. Smith left.', '他来了。']

To add a language rule (a new script, an abbreviation, a kind of number), change it here, add a
case to ``tests/text/``, and every caller picks it up.
"""

from __future__ import annotations

from flare.text.numerals import Number, numbers, whole_number
from flare.text.scripts import HAN, HAN_RE, WIDE, is_han, is_wide, join_words, language_of
from flare.text.segment import (
    STOPWORDS,
    RepeatWatch,
    Span,
    char_content_words,
    content_words,
    fold,
    repeated_ngram,
    word_spans,
    words,
)
from flare.text.sentences import (
    ABBREVIATIONS,
    CLOSERS,
    MARKS,
    SentenceWatch,
    ends_sentence,
    first_sentence_end,
    sentence_ends,
    split_sentences,
)

__all__ = [
    "ABBREVIATIONS",
    "CLOSERS",
    "HAN",
    "HAN_RE",
    "MARKS",
    "STOPWORDS",
    "WIDE",
    "Number",
    "RepeatWatch",
    "SentenceWatch",
    "Span",
    "char_content_words",
    "content_words",
    "ends_sentence",
    "first_sentence_end",
    "fold",
    "is_han",
    "is_wide",
    "join_words",
    "language_of",
    "numbers",
    "repeated_ngram",
    "sentence_ends",
    "split_sentences",
    "whole_number",
    "word_spans",
    "words",
]
