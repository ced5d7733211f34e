"""Ground-truth support of an answer in the evaluation world, decided from what the world knows.

Independent of any checker in :mod:`flare.verify`: the generator recorded which passage states
which fact, so an answer's claims are judged exactly. For each sentence (its text and the ids of
the passages it cites):

* **items** — the world entities it names (any alias, "Trulmi" for "Trulmi Systems"), the world
  numbers it states (read by :func:`flare.text.numbers`, so "twelve" is 12 and "12,400" is
  12400), and *foreign* claims: numbers that are no value of the world and capitalised words
  that are neither world names nor ordinary English words ("Paris") — invented, so unsupported;
* **scope** — the entities the sentence is about: those it names, plus, for each pronoun or
  phrase such as "he", "its", "the company", "there", the entities of that kind named by the
  nearest earlier sentence (else by the question); a sentence that names none and has values
  takes the nearest earlier sentence's entities;
* **supported** — every number v is a fact's value (or the year of an older figure) *for a
  subject in scope*, stated by a cited passage (right value, wrong subject is unsupported); every
  named entity occurs in a cited passage and is tied to the rest: a fact of a subject in scope
  has it as value, or it is the subject of a fact used for another item, or it is the
  sentence's only item; no foreign claim. A sentence without items is ``no_claims``.
  Relations are not compared (only subject and value): "born in 1950" for a founding year of
  1950 of the same subject passes.

Answer level: fact recall (share of the question's gold facts stated anywhere: value present,
subject in scope), supported fact recall (stated by a supported sentence through a cited
passage), fact precision (share of items true in the world, whatever was cited), the share of
claim-bearing sentences unsupported (= 1 − citation recall), the share of *cited* claim-bearing
sentences unsupported, and citation precision (a citation is needed when the passage states a
fact the sentence uses).

Example::

    world = load_world(Path("docs/results/world/data/world"))  # from flare.evaluate.world
    verdict = judge(world, "wq000", [("Trulmi Systems was founded by Zhatar Zhuveban.", ["wp0546"])])
    verdict.fact_recall, verdict.sentences[0].status
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from flare.errors import InputError
from flare.evaluate.world.gen import Fact, World, WorldQuestion
from flare.evaluate.world.names import common_words
from flare.evaluate.world.text import INTROS, OLD_TEMPLATES, TEMPLATES
from flare.text import STOPWORDS, fold, numbers, word_spans

CitedSentence = tuple[str, Sequence[str]]
_MARKS = re.compile(r"\[\d+\]")

# Words that point back to an entity of some kinds ("any": every kind).
_ANAPHORS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(rf"\b(?:{words})\b", re.IGNORECASE), kinds) for words, kinds in (
        ("he|she|him|his|her|hers|himself|herself|the founder|the entrepreneur", ("person",)),
        ("it|its|itself", ("company", "town", "product", "river", "region")),
        ("they|them|their", ("person", "company", "town", "product", "river", "region")),
        ("the (?:company|firm|business|manufacturer|maker)", ("company",)),
        ("there|the (?:town|city|village|place|birthplace)|that town", ("town",)),
        ("the (?:product|device|appliance|kettle|bicycle|lawn mower|drone|espresso machine|sewing machine|desk lamp|"
         "water pump|printer|chainsaw)", ("product",)),
        ("the river", ("river",)),
        ("the (?:region|province)", ("region",)),
    )
)


@dataclass(frozen=True, slots=True)
class SentenceVerdict:
    """What the world says about one sentence of an answer."""

    text: str
    cited: tuple[str, ...]
    status: str  # supported / unsupported / no_claims
    entities: tuple[str, ...]  # ids of the world entities it names
    numbers: tuple[float, ...]  # world values it states
    foreign: tuple[str, ...]  # claims the world does not know: invented numbers and names
    failed: tuple[str, ...]  # the items that are not supported, as written
    facts_used: tuple[str, ...]  # facts, stated by a cited passage, that support its items
    needed: tuple[str, ...]  # cited passages that state a fact it uses
    gold_stated: tuple[str, ...]  # gold facts of the question it states (whatever it cites)
    true_items: int  # items true in the world (whatever it cites)
    outdated: int  # numbers that are only an older figure
    scope: tuple[str, ...] = ()  # the entities it is about: named, then pointed to by pronouns

    @property
    def supported(self) -> bool:
        return self.status == "supported"

    @property
    def items(self) -> int:
        return len(self.entities) + len(self.numbers) + len(self.foreign)


@dataclass(frozen=True, slots=True)
class AnswerVerdict:
    """Per-sentence verdicts and the answer-level figures (None where a figure has no denominator)."""

    question_id: str
    sentences: tuple[SentenceVerdict, ...]
    gold: tuple[str, ...]
    gold_stated: tuple[str, ...]
    gold_supported: tuple[str, ...]

    @property
    def fact_recall(self) -> float:
        return len(self.gold_stated) / len(self.gold) if self.gold else 0.0

    @property
    def supported_fact_recall(self) -> float:
        return len(self.gold_supported) / len(self.gold) if self.gold else 0.0

    @property
    def fact_precision(self) -> float | None:
        items = sum(s.items for s in self.sentences)
        return sum(s.true_items for s in self.sentences) / items if items else None

    @property
    def unsupported_share(self) -> float | None:
        claims = [s for s in self.sentences if s.status != "no_claims"]
        return sum(1 for s in claims if not s.supported) / len(claims) if claims else None

    @property
    def cited_unsupported(self) -> float | None:
        cited = [s for s in self.sentences if s.status != "no_claims" and s.cited]
        return sum(1 for s in cited if not s.supported) / len(cited) if cited else None

    @property
    def citation_recall(self) -> float | None:
        share = self.unsupported_share
        return None if share is None else 1.0 - share

    @property
    def citation_precision(self) -> float | None:
        cites = sum(len(s.cited) for s in self.sentences)
        return sum(len(s.needed) for s in self.sentences) / cites if cites else None

    def scores(self) -> dict[str, float | None]:
        """The answer-level figures by name, for a results record."""
        return {"fact_recall": self.fact_recall, "supported_fact_recall": self.supported_fact_recall,
                "fact_precision": self.fact_precision, "unsupported_share": self.unsupported_share,
                "cited_unsupported": self.cited_unsupported, "citation_recall": self.citation_recall,
                "citation_precision": self.citation_precision}


@dataclass(slots=True)
class _Check:
    """The outcome of checking one sentence's items against a set of passages."""

    ok: int = 0
    failed: list[str] = field(default_factory=list)
    used: dict[str, set[str]] = field(default_factory=dict)  # fact id -> passages that state it
    outdated: int = 0


class Judge:
    """Judges answers against one world; build once per world (it indexes names and facts)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.by_value: dict[str, list[Fact]] = {}
        for f in world.facts.values():
            self.by_value.setdefault(_key(f.value, f.kind), []).append(f)
            if f.as_of is not None:
                self.by_value.setdefault(_key(f.as_of, "year"), []).append(f)
        self.by_subject: dict[str, list[Fact]] = {}
        for f in world.facts.values():
            self.by_subject.setdefault(f.subject, []).append(f)
        aliases = sorted({(a, e.id) for e in world.entities.values() for a in e.aliases}, key=lambda x: -len(x[0]))
        self.alias_of = {a.casefold(): eid for a, eid in aliases}
        self.names = re.compile(r"\b(?:" + "|".join(re.escape(a) for a, _ in aliases) + r")\b", re.IGNORECASE)

    @cached_property
    def ordinary(self) -> frozenset[str]:
        """Words that are not a name even when capitalised: common English, templates, stopwords."""
        texts = [t for ts in (*TEMPLATES.values(), *OLD_TEMPLATES.values(), *INTROS.values()) for t in ts]
        texts += [q.question for q in self.world.questions] + [e.bare for e in self.world.entities.values()]
        return common_words() | STOPWORDS | {fold(w) for t in texts for w in re.findall(r"[A-Za-z]+", t)}

    def judge(self, question: str | WorldQuestion, sentences: Iterable[CitedSentence]) -> AnswerVerdict:
        """Judge an answer given as ``(sentence text, cited passage ids)`` pairs, in order."""
        q = self._question(question)
        q_ents = self.mentions(q.question)[0]
        history: list[list[str]] = []
        out: list[SentenceVerdict] = []
        gold = set(q.fact_ids)
        for text, cited in sentences:
            v = self._sentence(text, tuple(_doc(c) for c in cited), history, q_ents, gold)
            out.append(v)
            history.append(list(v.scope))
        stated = {f for s in out for f in s.gold_stated}
        backed = {f for s in out if s.supported for f in s.facts_used if f in gold}
        order = list(q.fact_ids)
        return AnswerVerdict(q.id, tuple(out), q.fact_ids, tuple(f for f in order if f in stated),
                             tuple(f for f in order if f in backed))

    def mentions(self, text: str) -> tuple[list[str], list[tuple[int, int]]]:
        """Entity ids named in ``text`` (in order, repeats removed) and the spans of the names."""
        ids: list[str] = []
        spans = []
        for m in self.names.finditer(text):
            ids.append(self.alias_of[m.group().casefold()])
            spans.append((m.start(), m.end()))
        return list(dict.fromkeys(ids)), spans

    def _question(self, question: str | WorldQuestion) -> WorldQuestion:
        if isinstance(question, WorldQuestion):
            return question
        for q in self.world.questions:
            if question in (q.id, q.question):
                return q
        raise InputError(f"no world question with id or text {question!r}", "pass an id such as 'wq000'")

    def _sentence(self, text: str, cited: tuple[str, ...], history: list[list[str]], q_ents: list[str],
                  gold: set[str]) -> SentenceVerdict:
        raw, text = text, _MARKS.sub("", text)  # inline "[1]" markers are not claims
        ents, spans = self.mentions(text)
        nums: list[float] = []
        invented: list[float] = []
        for n in numbers(text):
            if not any(s <= n.start < e for s, e in spans):
                (nums if _key(n.value, "number") in self.by_value else invented).append(n.value)
        foreign_txt = [_fmt(x) for x in invented] + self._foreign_names(text, spans)
        order = list(dict.fromkeys([*ents, *self._resolve(text, bool(ents), history, q_ents)]))
        scope = set(order)
        items = len(ents) + len(nums) + len(foreign_txt)
        if not items:
            return SentenceVerdict(raw, cited, "no_claims", (), (), (), (), (), (), (), 0, 0, tuple(order))
        # One name and nothing else is a mere mention ("Tisdunvul is known for its fair."), unless a
        # pronoun before it is the subject ("He was born in Tisdunvul.": whose birthplace?).
        lone = len(ents) == 1 and not nums and spans[0][0] <= _first_anaphor(text)
        backed = self._check(ents, nums, scope, set(cited), lone=lone)
        truth = self._check(ents, nums, scope, None, lone=lone)
        failed = [*backed.failed, *foreign_txt] if cited else ["(no citation)", *foreign_txt]
        used = tuple(sorted(backed.used))
        needed = tuple(p for p in cited if any(p in ps for ps in backed.used.values()))
        stated = tuple(f for f in sorted(gold) if self._states(self.world.facts[f], ents, nums, scope))
        return SentenceVerdict(raw, cited, "unsupported" if failed else "supported", tuple(ents), tuple(nums),
                               tuple(foreign_txt), tuple(failed), used, needed, stated, truth.ok, truth.outdated,
                               tuple(order))

    def _foreign_names(self, text: str, spans: list[tuple[int, int]]) -> list[str]:
        out = []
        for w in word_spans(text):
            if not w.text[:1].isupper() or any(s <= w.start < e for s, e in spans):
                continue
            if len(w.text) > 1 and not any(c.isdigit() for c in w.text) and fold(w.text) not in self.ordinary:
                out.append(w.text)
        return out

    def _resolve(self, text: str, named: bool, history: list[list[str]], q_ents: list[str]) -> list[str]:
        """Entities the sentence's pronouns point to (or, naming none, the previous sentence's).

        ``history`` holds each earlier sentence's scope, so "It" after "The town lies on the
        Drinu River." still reaches the town that "The town" pointed to.
        """
        wanted = [kinds for pattern, kinds in _ANAPHORS if pattern.search(text)]
        if not wanted and not named:
            wanted = [("person", "company", "town", "product", "river", "region")]
        out: list[str] = []
        for kinds in wanted:
            for ents in [*reversed(history), q_ents]:
                hits = [e for e in ents if self.world.entities[e].kind in kinds]
                if hits:
                    out += hits
                    break
        return out

    def _check(self, ents: list[str], nums: list[float], scope: set[str], cited: set[str] | None, *,
               lone: bool) -> _Check:
        """Which items facts of subjects in scope support, through ``cited`` passages (None: any)."""
        c = _Check()

        def stated(f: Fact) -> set[str]:
            return set(f.passage_ids) if cited is None else set(f.passage_ids) & cited

        for v in nums:
            hits = [f for f in self.by_value.get(_key(v, "number"), []) if f.subject in scope and stated(f)]
            for f in hits:
                c.used.setdefault(f.id, set()).update(stated(f))
            if hits:
                c.ok += 1
                c.outdated += all(not f.current and float(f.value) == v for f in hits)  # not the "In 2012"
            else:
                c.failed.append(_fmt(v))
        for e in ents:
            as_value = [f for f in self.by_value.get(_key(e, "entity"), []) if f.subject in scope - {e} and stated(f)]
            for f in as_value:
                c.used.setdefault(f.id, set()).update(stated(f))
        subjects = {self.world.facts[f].subject for f in c.used}
        values = {str(self.world.facts[f].value) for f in c.used}
        for e in ents:
            in_cited = cited is None or any(e in self.world.passages[p].entities for p in cited
                                            if p in self.world.passages)
            tied = e in subjects or e in values or lone
            if in_cited and tied:
                c.ok += 1
            else:
                c.failed.append(self.world.entities[e].name)
        return c

    def _states(self, f: Fact, ents: list[str], nums: list[float], scope: set[str]) -> bool:
        """Does a sentence with these items state fact ``f``: its value, for its subject?"""
        if f.subject not in scope:
            return False
        if f.kind == "entity":
            return f.value in ents and f.value != f.subject
        return float(f.value) in nums


def _first_anaphor(text: str) -> int:
    """Where the first pronoun or anaphoric phrase of ``text`` starts (its length when none)."""
    return min((m.start() for pattern, _ in _ANAPHORS if (m := pattern.search(text))), default=len(text))


def _key(value: str | int | float, kind: str) -> str:
    return f"e:{value}" if kind == "entity" else f"n:{float(value)}"


def _fmt(x: float) -> str:
    return str(int(x)) if x == int(x) else str(x)


def _doc(passage_id: str) -> str:
    return passage_id.split("#", 1)[0]


def judge(world: World, question: str | WorldQuestion, sentences: Iterable[CitedSentence]) -> AnswerVerdict:
    """Judge one answer (see :class:`Judge`; build a ``Judge`` once when judging many)."""
    return Judge(world).judge(question, sentences)


def sentences_from_trace(trace: Mapping[str, Any]) -> list[CitedSentence]:
    """``(sentence, cited passage ids)`` pairs from a trace dict (``flare.trace`` schema)."""
    ids = {int(s["n"]): str(s["id"]) for s in trace.get("sources", [])}
    return [(s["sentence"], [ids[n] for n in s.get("citations", []) if n in ids])
            for s in trace.get("steps", []) if s.get("sentence")]


def sentences_from_answer(answer: Any) -> list[CitedSentence]:
    """``(sentence, cited passage ids)`` pairs from a :class:`flare.types.Answer`."""
    ids = {c.n: c.passage_id for c in answer.sources}
    return [(s.text, [ids[n] for n in s.citations if n in ids]) for s in answer.sentences]
