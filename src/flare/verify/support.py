"""Is a sentence supported by the passages it cites? (C5, C6)

A sentence makes *claims*: the numbers, names and content words it states. Each claim must be
found in the cited passages; the verdict says which passages back the sentence and which spans of
it no passage backs.

Two signals, for English and Chinese:

* **lexical** — every claim is looked up in the passages: numbers by value (``ten`` = ``10`` =
  ``十``; ``1,642`` = ``1642``), names and content words by their folded form (English words
  also by a light stem, so "founded" finds "founder"; Chinese words also as a substring, since
  jieba may cut the passage differently). Numbers and names are *critical*: one missing makes the
  sentence fail. Content words may be paraphrased, so a sentence fails on them only when too
  few are found.
* **evidence lift** (optional, model-based) — the LM's log-probability of each claim's tokens with
  the passages in the prompt minus without them. A content word the passages do not spell out but
  made far more likely (a paraphrase) counts as found; see :func:`check`'s ``lift`` argument.

Labels: ``supported`` (nothing missing), ``partial`` (some claims found, some not),
``unsupported`` (nothing or almost nothing found), ``no_claims`` (nothing to check: "Yes.", "It is
not known.", "The documents do not say where he was born." — see :func:`says_not_given`). A
sentence *passes* when it is supported or has no claims.

Example::

    >>> from flare.types import Passage, TokenLogprob
    >>> p = Passage("p1", "Refunds are paid within ten working days.", "Travel policy")
    >>> check("Refunds take 10 working days.", [p]).label
    'supported'
    >>> v = check("Refunds take 3 months.", [p])
    >>> v.label, v.unsupported
    ('unsupported', ('3 months',))
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from flare.text import fold, is_han, numbers, word_spans
from flare.types import Passage, TokenLogprob

Label = Literal["supported", "partial", "unsupported", "no_claims"]
Kind = Literal["number", "name", "word"]

# Words that state no fact of their own: function words, auxiliaries, pronouns, hedges, the
# vocabulary of answering ("answer", "known", "search results"), and common sentence openers.
LIGHT = frozenset(
    """
    a an the of in on at to for and or but nor is are was were be been being am by with as from into onto
    that this these those it its he she they them him her his hers their theirs we us our you your i me my
    which who whom whose what when where why how than then so not no yes also too very more most less least
    has have had having do does did done can could will would shall should may might must there here
    about after before during while since until over under between among within without through
    all any some each every both either neither other another such same only just even still yet
    one ones many much few several lot lots thing things way ways
    answer answers question questions known unknown information search result results text passage
    passages document documents source sources according say says said state states stated mention
    mentioned however therefore thus although though because if whether
    also well first later take takes took taken make makes made get gets got give gives gave given
    include includes included including called named use used
    的 了 是 在 和 与 及 或 就 都 而 其 这 那 有 也 为 被 把 将 对 于 以 之 所 中 等 个 该 并 还 但
    答案 问题 搜索 结果 资料 文档 根据 不 没有 未知 知道 已知
    """.split()  # noqa: SIM905 - a word list is easier to read and extend as text
)

# Suffixes stripped for the light stem (longest first); stems keep at least 4 characters.
_SUFFIXES = ("ations", "ation", "ments", "ment", "ings", "ing", "ers", "er", "ies", "es", "ed", "s", "ly")
_CAPITAL = re.compile(r"^[A-Z][\w'-]*$|^[A-Z0-9]+(?:[-/.][A-Z0-9]+)+$")


@dataclass(frozen=True, slots=True)
class Claim:
    """A unit of a sentence that a passage must back: ``text`` at ``start:end``."""

    text: str
    start: int
    end: int
    kind: Kind
    value: float | None = None  # numbers only


@dataclass(frozen=True, slots=True)
class Support:
    """The verdict on one sentence.

    ``cited`` are indexes into the passages given, the smallest set that backs what the sentence
    states (best first); ``unsupported`` are the spans of the sentence that no passage backs;
    ``coverage`` is the weighted share of claims found; ``lift`` the mean evidence lift (nats per
    claim) when the model-based signal was used, else None.
    """

    label: Label
    cited: tuple[int, ...] = ()
    unsupported: tuple[str, ...] = ()
    coverage: float = 1.0
    lift: float | None = None
    claims: int = 0
    details: tuple[tuple[str, str, bool, float | None], ...] = ()  # (claim, kind, found, lift) each

    @property
    def passes(self) -> bool:
        """Supported, or nothing to support."""
        return self.label in ("supported", "no_claims")


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Where the verdicts change, as chosen on the world's development sentences.

    ``docs/results/verify/calibrate.py`` scored a grid against the world's ground truth (229
    sentences, 98 unsupported): subject co-location, no relation-word rule, no lift and 0.8
    coverage flagged truth-unsupported sentences best (precision 0.87, recall 0.78, F1 0.82);
    the evidence lift never raised F1 there, so ``Settings.evidence_lift`` is off by default.
    """

    supported: float = 0.8  # weighted share of claims found, with no critical claim missing
    unsupported: float = 0.34  # below this share the sentence is unsupported, not partial
    lift: float = 2.0  # nats: a lexically missing content word this much likelier with the passages counts
    colocate: bool = True  # a number or name counts only in a passage that names the sentence's subject
    relation: bool = False  # a number counts only in a passage sentence that shares a word with the sentence


WEIGHTS: Mapping[str, float] = {"number": 3.0, "name": 2.0, "word": 1.0}
DEFAULT = Thresholds()


def claims(sentence: str) -> list[Claim]:
    """The numbers, names and content words of ``sentence``, in order, without duplicates.

    Identifiers that mix letters and digits (``FX-200``) are names, not the number inside them.
    """
    spans = word_spans(sentence)
    idents = [w for w in spans if any(c.isdigit() for c in w.text) and any(c.isalpha() for c in w.text)]
    out = [Claim(w.text, w.start, w.end, "name") for w in idents]
    taken = [(w.start, w.end) for w in idents]
    for n in numbers(sentence):
        if not any(a <= n.start and n.end <= b for a, b in taken):
            out.append(Claim(n.text, n.start, n.end, "number", n.value))
            taken.append((n.start, n.end))
    seen: set[str] = set()
    for i, w in enumerate(spans):
        if any(a < w.end and w.start < b for a, b in taken):
            continue
        folded = fold(w.text)
        if folded in LIGHT or folded in seen or (len(folded) == 1 and not is_han(folded)):
            continue
        seen.add(folded)
        kind: Kind = "word"
        if _CAPITAL.match(w.text) and (i > 0 or _capitalised_next(sentence, w.end)):
            kind = "name"  # a sentence-initial word is a name only as part of one: "Northwind Labs"
        out.append(Claim(w.text, w.start, w.end, kind))
    return sorted(out, key=lambda c: c.start)


_POINTER = re.compile(
    r"^(?:it|its|he|his|she|her|they|their|this|these|there|the (?:company|firm|business|maker|manufacturer|"
    r"founder|town|city|village|river|region|province|product|device|brand|person|man|woman|group))\b",
    re.IGNORECASE,
)


def subject(sentence: str, context: Sequence[str] = ()) -> frozenset[str]:
    """The folded words of the name a sentence (or clause) is about; empty when it names none.

    The first run of names in the sentence ("Northwind Labs was founded …"); for a sentence that
    opens with a pointer ("It", "He", "The company"), the subject of the closest earlier text in
    ``context`` that names one (the question comes first in it): an earlier sentence that opens
    with a pointer itself is about what it points at, not the names it goes on to say. A sentence
    that names nothing and points at nothing ("Refunds take ten days.") has no subject to check.

    A name of one word that opens a sentence ("Baberri is part of the Lennelkes region.") counts
    when the sentence or ``context`` writes it capitalised elsewhere too: the opening capital alone
    does not tell a name from a common word. An opening word that is a possessive or part of a longer
    name ("Aristarete's father was Nearchos.", "Philip of Sicily's father …") still does not count:
    those sentences are about someone the name's owner is related to. Nor does it for a personal
    pointer ("He", "His"), which points at a person the earlier sentence names after its opening.

        >>> sorted(subject("It lies on the Kinshu River.", ["Describe Baberri.", "Baberri is in Lennelkes."]))
        ['baberri']
    """
    return _subject(sentence, context, _named([*context, sentence]))


def _subject(sentence: str, context: Sequence[str], named: frozenset[str]) -> frozenset[str]:
    if _POINTER.match(sentence.strip()):
        # "He", "His" point at a person, seldom at what an earlier sentence opens with: "Rebecca
        # was directed by Alfred Hitchcock. His mother …" is about Hitchcock, not the film.
        opening = frozenset() if _PERSONAL.match(sentence.strip()) else named
        for i in range(len(context) - 1, -1, -1):
            if i > 0 and _POINTER.match(context[i].strip()):
                continue
            found = _first_names(context[i], opening)
            if found:
                return found
        return frozenset()
    return _first_names(sentence, named)


_CLAUSE = re.compile(r"[;；，]\s*|,\s+(?=(?:and|but|while|whereas|which|who)\b)")


def _subjects(sentence: str, context: Sequence[str]) -> list[tuple[int, frozenset[str]]]:
    """``(start, subject)`` of each clause: a clause that names something is about that."""
    named = _named([*context, sentence])
    whole = _subject(sentence, context, named)
    out = [(0, whole)]
    for m in _CLAUSE.finditer(sentence):
        clause = sentence[m.end() :]
        own = _first_names(clause.split(",")[0], named) if not _POINTER.match(clause) else whole
        out.append((m.end(), own or frozenset()))
    return out


_POSSESSIVE = re.compile(r"['’]s?$")
_PERSONAL = re.compile(r"^(?:he|his|she|her|they|their)\b", re.IGNORECASE)  # the people among _POINTER
_LINKED = re.compile(r"\s+(?:of|the|de|von|van|der|den|du|da|di|del|la|le|bin|ibn|al|y)\b")


def _whole_name(text: str, c: Claim) -> bool:
    """Is the word ``c`` a whole name by itself: not possessive, not linked to more ("Philip of Sicily's")?"""
    return not _POSSESSIVE.search(c.text) and not _LINKED.match(text, c.end)


def _named(texts: Sequence[str]) -> frozenset[str]:
    """The folded words ``texts`` write as names (capitalised past a sentence's opening)."""
    return frozenset(fold(c.text) for t in texts for c in claims(t) if c.kind == "name")


def _first_names(text: str, named: frozenset[str] = frozenset()) -> frozenset[str]:
    run: list[str] = []
    run_end = 0
    for c in claims(text):
        # Only a sentence's opening word is a capitalised "word" claim (see claims()).
        opening = c.kind == "word" and bool(_CAPITAL.match(c.text)) and fold(c.text) in named and _whole_name(text, c)
        if (c.kind == "name" or opening) and not any(ch.isdigit() for ch in c.text):
            if run and c.start > run_end + 1:
                break
            run.append(fold(c.text))
            run_end = c.end
        elif run:
            break
    return frozenset(run)


def _capitalised_next(sentence: str, end: int) -> bool:
    rest = word_spans(sentence[end : end + 40])
    return bool(rest) and bool(_CAPITAL.match(rest[0].text))


def claim_lift(
    sentence: str,
    with_passages: Sequence[TokenLogprob],
    without: Sequence[TokenLogprob],
) -> list[float | None]:
    """Evidence lift of each claim of ``sentence``: log p(claim | passages) − log p(claim).

    Both token sequences spell the sentence (possibly with leading whitespace, as generated); a
    claim's log-probability is the sum over the tokens that overlap it. None where a side has no
    token for the claim (the texts did not line up).
    """
    a, b = _offsets(sentence, with_passages), _offsets(sentence, without)
    out: list[float | None] = []
    for c in claims(sentence):
        la, lb = _sum_over(a, c), _sum_over(b, c)
        out.append(None if la is None or lb is None else round(la - lb, 4))
    return out


def _offsets(sentence: str, tokens: Sequence[TokenLogprob]) -> list[tuple[int, int, float]]:
    """Token spans in ``sentence`` coordinates (leading whitespace of the tokens removed)."""
    text = "".join(t.text for t in tokens)
    shift = len(text) - len(text.lstrip())
    if text[shift:].rstrip() != sentence.strip():
        return []
    out, pos = [], -shift
    for t in tokens:
        out.append((pos, pos + len(t.text), t.logprob))
        pos += len(t.text)
    return out


def _sum_over(spans: Sequence[tuple[int, int, float]], claim: Claim) -> float | None:
    parts = [lp for a, b, lp in spans if a < claim.end and claim.start < b]
    return sum(parts) if parts else None


class _Evidence:
    """One passage, prepared for lookups: its words, stems and numbers, whole and per sentence."""

    __slots__ = ("numbers", "sentences", "stems", "text", "words")

    def __init__(self, passage: Passage) -> None:
        full = f"{passage.title}\n{passage.text}"
        self.text = fold(full)
        self.words = {fold(s.text) for s in word_spans(full)}
        self.stems = {_stem(w) for w in self.words}
        self.numbers = {n.value for n in numbers(full)}
        self.sentences = [
            ({n.value for n in numbers(part)}, {_stem(fold(w.text)) for w in word_spans(part)})
            for part in _SENTENCE_END.split(full)
        ]

    def names(self, folded_words: frozenset[str]) -> bool:
        """Does the passage name every word of ``folded_words`` (a subject)?"""
        return folded_words <= self.words

    def backs(self, claim: Claim) -> bool:
        if claim.kind == "number":
            return claim.value in self.numbers
        w = fold(claim.text)
        if w in self.words or _stem(w) in self.stems:
            return True
        return any(is_han(c) for c in w) and w in self.text

    def relates(self, claim: Claim, relation: set[str]) -> bool:
        """A number stated in a sentence of the passage that also says one of ``relation``'s words."""
        return any(claim.value in nums and stems & relation for nums, stems in self.sentences)


_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*|\n")


_SOURCES = r"(?:the\s+)?(?:documents?|search\s+results?|passages?|sources?)"
_NOT_GIVEN = re.compile(
    rf"^\s*{_SOURCES}\s+(?:do|does|did)\s+not\s+(?:say|mention|specify|state|give|provide)\b[^,;]*$"
    rf"|^[^,;]*\s(?:is|are|was|were)\s+not\s+(?:specified|mentioned|stated|given|provided)\s+in\s+{_SOURCES}\W*$"
    r"|^\s*(?:文档|检索结果|资料|搜索结果)中?(?:没有|未)(?:给出|说明|提及|提到|写明)[^，；,;]*$",
    re.IGNORECASE,
)


def says_not_given(sentence: str) -> bool:
    """Does ``sentence`` only say that the sources do not give something? Then it claims nothing.

    "The documents do not say where he was born." and "The place of birth is not specified in the
    search results." state no fact about the world, so they need no source and must not cite the
    passages that happen to name their subject; a sentence that also states a fact ("He was
    born in 1950, but the documents do not say where.") is checked as usual.

        >>> says_not_given("The documents do not say whether dogs may travel."), says_not_given("文档中没有给出答案。")
        (True, True)
        >>> says_not_given("He was born in 1950, but the documents do not say where.")
        False
    """
    return bool(_NOT_GIVEN.search(sentence.strip()))


def check(
    sentence: str,
    passages: Sequence[Passage],
    *,
    lift: Sequence[float | None] | None = None,
    context: Sequence[str] = (),
    thresholds: Thresholds = DEFAULT,
) -> Support:
    """Judge whether ``passages`` support ``sentence`` (see the module notes).

    ``lift`` (optional) gives, for each claim of :func:`claims`, the evidence lift in nats and is
    aligned with it; pass the output of :func:`claim_lift`. Without passages, a sentence with
    numbers or names is unsupported and one without is ``no_claims``: only facts need a source.

    ``context`` is what came before the sentence (the question, then the answer's sentences), used
    to find what a sentence is about when it says "It was founded in 1999." (see :func:`subject`):
    a number or name backs the sentence only in a passage that also names that subject, so a
    year taken from another entity's passage does not count.
    """
    units = claims(sentence)
    if not units or says_not_given(sentence):
        return Support("no_claims", claims=len(units))
    if not passages:
        details: tuple[tuple[str, str, bool, float | None], ...] = tuple((c.text, c.kind, False, None) for c in units)
        if any(c.kind != "word" for c in units):
            return Support("unsupported", (), _spans(sentence, units), 0.0, None, len(units), details)
        return Support("no_claims", claims=len(units), details=details)
    evidence = [_Evidence(p) for p in passages]
    lifts: list[float | None] = list(lift) if lift is not None else [None] * len(units)
    clauses = _subjects(sentence, context) if thresholds.colocate else []
    relation = {_stem(fold(c.text)) for c in units if c.kind == "word"} if thresholds.relation else set()
    found_by = []
    for c in units:
        hits = {i for i, e in enumerate(evidence) if e.backs(c)}
        about = next((subj for start, subj in reversed(clauses) if start <= c.start), frozenset())
        if about and c.kind != "word" and fold(c.text) not in about:
            hits = {i for i in hits if evidence[i].names(about)}
        if relation and c.kind == "number":
            hits = {i for i in hits if evidence[i].relates(c, relation)}
        found_by.append(hits)
    details = tuple((c.text, c.kind, bool(h), g) for c, h, g in zip(units, found_by, lifts, strict=True))
    label, coverage, backed = decide(details, thresholds)
    cited = _cover(found_by, [WEIGHTS[c.kind] for c in units])
    known = [g for g in lifts if g is not None]
    mean_lift = round(sum(known) / len(known), 4) if known else None
    missing = [c for c, ok in zip(units, backed, strict=True) if not ok]
    spans = _spans(sentence, missing) if label != "supported" else ()
    return Support(label, tuple(cited), spans, round(coverage, 4), mean_lift, len(units), details)


def decide(
    details: Sequence[tuple[str, str, bool, float | None]], thresholds: Thresholds = DEFAULT
) -> tuple[Label, float, list[bool]]:
    """The label, the weighted share of claims backed, and which are, from per-claim evidence.

    ``details`` are ``(claim, kind, found in a passage, lift)``, as :attr:`Support.details`
    records them. A content word no passage spells out counts as backed when its evidence lift
    reaches ``thresholds.lift`` (a paraphrase); numbers and names must be found.
    """
    backed = [found or (kind == "word" and gain is not None and gain >= thresholds.lift)
              for _, kind, found, gain in details]  # fmt: skip
    total = sum(WEIGHTS[d[1]] for d in details)
    coverage = sum(WEIGHTS[d[1]] for d, ok in zip(details, backed, strict=True) if ok) / total
    if coverage < thresholds.unsupported:
        return "unsupported", coverage, backed
    if any(d[1] != "word" and not ok for d, ok in zip(details, backed, strict=True)) or coverage < thresholds.supported:
        return "partial", coverage, backed
    return "supported", coverage, backed


def _cover(found_by: Sequence[set[int]], weights: Sequence[float]) -> list[int]:
    """The fewest passages that back every claim any passage backs (greedy, heaviest first)."""
    left = {i for i, h in enumerate(found_by) if h}
    chosen: list[int] = []
    while left:
        gain: dict[int, float] = {}
        for i in left:
            for p in found_by[i]:
                gain[p] = gain.get(p, 0.0) + weights[i]
        best = max(gain, key=lambda p: (gain[p], -p))
        chosen.append(best)
        left = {i for i in left if best not in found_by[i]}
    return chosen


def _spans(sentence: str, missing: Sequence[Claim]) -> tuple[str, ...]:
    """Missing claims as spans of the sentence; neighbours joined by light words merge."""
    spans: list[tuple[int, int]] = []
    for c in sorted(missing, key=lambda c: c.start):
        if spans and _only_light(sentence[spans[-1][1] : c.start]):
            spans[-1] = (spans[-1][0], c.end)
        else:
            spans.append((c.start, c.end))
    return tuple(sentence[a:b] for a, b in spans)


def _only_light(gap: str) -> bool:
    """A gap of spaces, light words and joining punctuation ("3 months", "ten working days")."""
    if len(gap) > 12 or any(ch in gap for ch in ".;:!?。；：！？"):
        return False
    return all(fold(s.text) in LIGHT for s in word_spans(gap))


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def exemplar_leaks(sentence: str, header: str, question: str, passages: Sequence[Passage]) -> tuple[str, ...]:
    """Names in ``sentence`` that only the prompt's exemplars (``header``) contain.

    A small model copies names from its few-shot exemplars into answers about other things; a
    name that is in the exemplars but in neither the question nor the passages can only have come
    from them.
    """
    names = [c for c in claims(sentence) if c.kind == "name"]
    if not names or not header:
        return ()
    exemplar = {fold(s.text) for s in word_spans(header)}
    live = {fold(s.text) for s in word_spans(" ".join([question, *(f"{p.title} {p.text}" for p in passages)]))}
    return tuple(c.text for c in names if fold(c.text) in exemplar and fold(c.text) not in live)
