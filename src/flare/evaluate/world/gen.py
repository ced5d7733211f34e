"""A seeded, fictional world for long-form evaluation: entities, facts, passages and questions.

People, companies, towns, products, rivers and regions with invented names hold facts
``(subject, relation, value)`` whose value is another entity or a literal (a year, a count, a
price, a percentage, a duration, a length). Every entity's facts are spread over several short
passages, each about that entity alone, so a question about a company is answered in part by
passages about its founder and the founder's birthplace, which never name the company: the
question alone does not retrieve them. Distractors make retrieval and checking honest: near-miss
twins (``Vruzan Tools`` / ``Vruzun Tools``) with close numbers, and older figures in passages whose
``year`` metadata is older, so a ``year>=2020`` filter matters.

The generator knows which passage states which fact; that ground truth goes to ``truth.jsonl``
and never into the passage text (see :mod:`flare.evaluate.world`). Same seed, same world.

Example::

    world = flare.evaluate.world.generate(seed=0, questions=160, dev=40)
    q = world.questions[0]
    [world.facts[f].relation for f in q.fact_ids]   # e.g. ['founded_by', 'founded_year', ...]
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from flare.evaluate.world.names import NameMaker
from flare.evaluate.world.text import INTROS, OLD_TEMPLATES, PAIR_TEMPLATES, PRONOUNS, TEMPLATES, surfaces, written

WORLD_VERSION = "flare.world/1"
COMPANY_SUFFIXES = ("Labs", "Works", "Systems", "Instruments", "Motors", "Textiles", "Foods", "Tools")
PRODUCT_NOUNS = ("kettle", "bicycle", "lawn mower", "drone", "espresso machine", "sewing machine", "desk lamp",
                 "water pump", "printer", "chainsaw")  # fmt: skip
RESERVED = (*COMPANY_SUFFIXES, "river", "region", "province", "town", "company")

# relation -> value kind ("entity" or the kind of literal)
RELATIONS: dict[str, str] = {
    "founded_by": "entity", "founded_year": "year", "headquartered_in": "entity", "employees": "count",
    "makes": "entity", "market_share": "percent", "born_in": "entity", "born_year": "year", "population": "count",
    "region": "entity", "river": "entity", "launch_year": "year", "price": "price", "warranty": "duration",
    "length": "length", "area": "area",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Entity:
    """A named thing of the world. ``aliases`` are the names it may be mentioned by, longest first."""

    id: str
    kind: str  # person, company, town, product, river, region
    name: str
    aliases: tuple[str, ...]
    pronoun: str = "it"  # he / she / it
    noun: str = ""  # what a product is: "kettle"
    twin_of: str | None = None  # the entity this near-miss imitates

    @property
    def bare(self) -> str:
        """The name as a value is written: "Lozister chainsaw", "Thusvik River", "Trulmi Systems"."""
        return f"{self.name} {self.noun}" if self.noun else self.name

    @property
    def inline(self) -> str:
        """The name inside a sentence, with its article: "the Lozister chainsaw"."""
        return f"the {self.bare}" if self.kind in ("product", "river") else self.bare


@dataclass(frozen=True, slots=True)
class Fact:
    """``subject`` (an entity id) has ``value`` (an entity id or a number) for ``relation``.

    ``as_of`` is set on an older figure (e.g. the staff count of 2012) that a newer fact replaces.
    """

    id: str
    subject: str
    relation: str
    value: str | int
    kind: str  # "entity" or the literal kind (year, count, price, percent, duration, length, area)
    as_of: int | None = None
    passage_ids: tuple[str, ...] = ()

    @property
    def current(self) -> bool:
        return self.as_of is None


@dataclass(frozen=True, slots=True)
class WorldPassage:
    """A passage about one entity; ``fact_ids`` and ``entities`` are ground truth, not corpus text."""

    id: str
    title: str
    text: str
    year: int
    subject: str
    fact_ids: tuple[str, ...]
    entities: tuple[str, ...]  # every entity the text names


@dataclass(frozen=True, slots=True)
class WorldQuestion:
    """A long-form question about ``head``; ``fact_ids`` are the facts a good answer states."""

    id: str
    question: str
    type: str
    split: str  # dev / test
    head: str
    fact_ids: tuple[str, ...]
    sub_questions: tuple[str, ...]  # one short question per gold fact
    reference: tuple[str, ...]  # one plain sentence per gold fact


@dataclass(frozen=True, slots=True)
class World:
    """Everything generated from one seed, keyed by id (insertion order is the generation order)."""

    seed: int
    entities: dict[str, Entity]
    facts: dict[str, Fact]
    passages: dict[str, WorldPassage]
    questions: tuple[WorldQuestion, ...]

    def aliases(self, fact: Fact) -> tuple[str, ...]:
        """Every accepted way of writing the fact's value."""
        if fact.kind == "entity":
            return self.entities[str(fact.value)].aliases
        return surfaces(fact.kind, int(fact.value))

    def is_bridge(self, head: str, fact: Fact) -> bool:
        """Does ``fact`` need a hop from ``head``: no passage stating it names that entity?"""
        return not any(head in self.passages[p].entities for p in fact.passage_ids)

    def value_text(self, fact: Fact) -> str:
        """The value as the reference writes it: a name, or the plain number with its unit."""
        if fact.kind == "entity":
            return self.entities[str(fact.value)].bare
        return surfaces(fact.kind, int(fact.value))[0]


class Builder:
    """Draws entities and facts, then writes them into passages."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.names = NameMaker(rng, reserved=RESERVED)
        self.entities: list[Entity] = []
        self.facts: list[Fact] = []

    def entity(self, kind: str, name: str, aliases: tuple[str, ...], *, pronoun: str = "it", noun: str = "",
               twin_of: str | None = None) -> Entity:
        e = Entity(f"e{len(self.entities):04d}", kind, name, aliases, pronoun, noun, twin_of)
        self.entities.append(e)
        return e

    def fact(self, subject: Entity, relation: str, value: Entity | int, as_of: int | None = None) -> None:
        v = value.id if isinstance(value, Entity) else value
        self.facts.append(Fact(f"f{len(self.facts):05d}", subject.id, relation, v, RELATIONS[relation], as_of))

    def populate(self, n_companies: int) -> None:
        r, nm = self.rng, self.names
        regions = [self.entity("region", n, (n,)) for n in (nm.take(3) for _ in range(max(3, n_companies // 12)))]
        rivers = [self.entity("river", f"{n} River", (f"{n} River", n)) for n in
                  (nm.take(2) for _ in range(max(4, n_companies // 8)))]
        for e in regions:
            self.fact(e, "area", r.randrange(300, 9000, 10))
        for e in rivers:
            self.fact(e, "length", r.randrange(40, 900))
        towns = [self.town(nm.take(3), regions, rivers) for _ in range(math.ceil(n_companies * 0.75))]
        for _ in range(n_companies):
            person = self.person(nm.take(2), nm.take(3), towns)
            self.company(f"{nm.take(r.choice((2, 3)))} {r.choice(COMPANY_SUFFIXES)}", person, towns)
        self.twins(towns, regions, rivers)

    def town(self, name: str, regions: list[Entity], rivers: list[Entity], twin_of: Entity | None = None) -> Entity:
        r = self.rng
        e = self.entity("town", name, (name,), twin_of=twin_of.id if twin_of else None)
        base = self._num(twin_of, "population") if twin_of else r.randrange(900, 95_000, 10)
        self.fact(e, "population", base if not twin_of else _near(r, base, 10))
        self.fact(e, "region", r.choice(regions))
        self.fact(e, "river", r.choice(rivers))
        year = self._num(twin_of, "founded_year") + r.randint(3, 40) if twin_of else r.randint(1100, 1850)
        self.fact(e, "founded_year", year)
        if r.random() < 0.4:  # an older census figure, in a passage dated that year
            self.fact(e, "population", _near(r, self._num(e, "population"), 10, lower=True), r.randint(2008, 2017))
        return e

    def person(self, given: str, surname: str, towns: list[Entity], twin_of: Entity | None = None) -> Entity:
        r = self.rng
        full = f"{given} {surname}"
        e = self.entity("person", full, (full, surname, given), pronoun=r.choice(("he", "she")),
                        twin_of=twin_of.id if twin_of else None)
        self.fact(e, "born_year", self._num(twin_of, "born_year") + r.choice((-2, -1, 1, 2)) if twin_of
                  else r.randint(1930, 1985))
        self.fact(e, "born_in", r.choice(towns))
        return e

    def company(self, name: str, founder: Entity | None, towns: list[Entity], twin_of: Entity | None = None) -> None:
        r = self.rng
        core = name.split()[0]
        e = self.entity("company", name, (name, core), twin_of=twin_of.id if twin_of else None)
        if founder is not None:
            self.fact(e, "founded_by", founder)
            year = min(2016, self._num(founder, "born_year") + r.randint(22, 45))
        else:
            year = self._num(twin_of, "founded_year") + r.choice((-3, -2, -1, 1, 2, 3))
        self.fact(e, "founded_year", year)
        self.fact(e, "headquartered_in", r.choice(towns))
        staff = int(math.exp(r.uniform(math.log(12), math.log(4800))))
        self.fact(e, "employees", _near(r, self._num(twin_of, "employees"), 10) if twin_of else staff)
        self.fact(e, "market_share", r.randint(2, 38))
        if founder is None:
            return
        pname, noun = self.names.take(3), r.choice(PRODUCT_NOUNS)
        p = self.entity("product", pname, (f"{pname} {noun}", pname), noun=noun)
        self.fact(e, "makes", p)
        launch = r.randint(max(year + 1, 1985), 2022)
        self.fact(p, "launch_year", launch)
        self.fact(p, "price", r.randrange(15, 2400))
        self.fact(p, "warranty", r.randint(2, 10))  # never 1: "one" alone is not read as a number
        if r.random() < 0.4:
            self.fact(e, "employees", _near(r, self._num(e, "employees"), 25, lower=True),
                      r.randint(max(year + 1, 2008), 2017))
        if launch <= 2016 and r.random() < 0.4:
            self.fact(p, "price", _near(r, self._num(p, "price"), 20), r.randint(max(launch, 2008), 2017))

    def twins(self, towns: list[Entity], regions: list[Entity], rivers: list[Entity]) -> None:
        """Near-miss entities: one vowel away from a real one, with close numbers."""
        originals = [e for e in self.entities if e.kind in ("town", "person", "company")]
        for orig in self.rng.sample(originals, len(originals) // 4):
            if orig.kind == "town" and (name := self.names.variant(orig.name)):
                self.town(name, regions, rivers, twin_of=orig)
            elif orig.kind == "person" and (name := self.names.variant(orig.name.split()[1])):
                self.person(self.names.take(2), name, towns, twin_of=orig)
            elif orig.kind == "company" and (name := self.names.variant(orig.name.split()[0])):
                self.company(f"{name} {orig.name.split()[1]}", None, towns, twin_of=orig)

    def _num(self, e: Entity | None, relation: str) -> int:
        assert e is not None
        return next(int(f.value) for f in self.facts if f.subject == e.id and f.relation == relation and f.current)

    def write_passages(self) -> dict[str, WorldPassage]:
        """Each entity's current facts in passages of 1-3 facts; each older figure in its own."""
        r = self.rng
        drafts: list[tuple[Entity, list[Fact], int]] = []
        for e in self.entities:
            mine = [f for f in self.facts if f.subject == e.id]
            current = [f for f in mine if f.current]
            r.shuffle(current)
            while current:
                take = min(len(current), r.choice((1, 2, 2, 3)))
                drafts.append((e, current[:take], r.randint(2020, 2024)))
                current = current[take:]
            drafts += [(e, [f], int(f.as_of or 0) + r.randint(0, 1)) for f in mine if not f.current]
        r.shuffle(drafts)
        by_id = {e.id: e for e in self.entities}
        out: dict[str, WorldPassage] = {}
        for n, (e, facts, year) in enumerate(drafts):
            pid = f"wp{n:04d}"
            text = self._text(e, facts, by_id)
            ents = (e.id, *(str(f.value) for f in facts if f.kind == "entity"))
            title = e.bare if e.kind == "product" else e.name
            out[pid] = WorldPassage(pid, title, text, year, e.id, tuple(f.id for f in facts), ents)
        return dict(sorted(out.items()))

    def _text(self, e: Entity, facts: list[Fact], by_id: dict[str, Entity]) -> str:
        r = self.rng
        pos = {"he": "his", "she": "her"}.get(e.pronoun, "its")
        values = {f.relation: (by_id[str(f.value)].bare if f.kind == "entity" else written(f.kind, int(f.value), r))
                  for f in facts}
        if not facts[0].current:
            tpl = r.choice(OLD_TEMPLATES[facts[0].relation])
            return _cap(tpl.format(Y=facts[0].as_of, name=e.inline, v=values[facts[0].relation]))
        units: list[tuple[str, dict[str, str]]] = []
        rels = [f.relation for f in facts]
        for pair, tpls in PAIR_TEMPLATES.items():
            if all(p in rels for p in pair) and r.random() < 0.5:
                units.append((r.choice(tpls), {p: values.pop(p) for p in pair}))
        units += [(r.choice(TEMPLATES.get(f"{e.kind}.{rel}", TEMPLATES.get(rel, ()))), {"v": v})
                  for rel, v in values.items()]
        if r.random() < 0.4:
            units.insert(0, (r.choice(INTROS[e.kind]), {}))
        sentences = []
        for i, (tpl, slots) in enumerate(units):
            ref = _cap(e.inline) if i == 0 or r.random() < 0.5 else self._pronoun(e)
            sentences.append(_cap(tpl.format(S=ref, name=e.inline, pos=pos, **slots)))
        return " ".join(sentences)

    def _pronoun(self, e: Entity) -> str:
        if e.kind == "person":
            return e.pronoun.capitalize()
        options = PRONOUNS[e.kind] if e.kind != "product" else ("It", f"The {e.noun}")
        return self.rng.choice(options)


def _near(r: random.Random, value: int, percent: int, *, lower: bool = False) -> int:
    """A different number within ``percent`` % of ``value`` (below it with ``lower``)."""
    for _ in range(100):
        delta = r.uniform(percent / 4, percent) / 100 * (-1 if lower or r.random() < 0.5 else 1)
        out = round(value * (1 + delta))
        if out != value and out > 0:
            return out
    return value + 1


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]
