"""Long-form, multi-hop questions over the evaluation world, with their gold facts.

Every question names one entity (its *head*) and asks for 4 facts along a chain: a company's
founder, where that founder was born, when that town was founded. The later facts belong to
*bridge* entities the question does not name, and their passages do not name the head, so a
search with the question alone does not find them; an answer that wants them must search again
with what it has written so far, which is what FLARE is for.

Five kinds, taken in turn so each split has all of them; each head entity is used once:

==================  =========================================================================
``company_founder`` company: founder, founding year; founder's birthplace; that town's founding
``company_product`` company: its product and head office; the product's launch year and price
``product_maker``   product: its maker and warranty; the maker's head office; that town's size
``person_profile``  person: birth year and town; the company they founded; its staff count
``town_profile``    town: region and river; the one company based there; its founding year
==================  =========================================================================

:data:`BRIDGE_KINDS` are short two-hop questions with one answer, as in 2WikiMultihopQA: the head
names the first hop, and the answer is a fact of the entity that hop leads to (its passages never
name the head). They are written with ``kind="bridge"`` (see :func:`flare.evaluate.world.generate`):

=====================  ==============================================================
``founder_birthplace`` the town where the founder of company C was born
``maker_office``       the town where the maker of product P has its head office
``maker_founder``      who founded the company that makes product P
``founded_staff``      how many people work at the company person X founded
``based_founded``      the year the one company based in town T was founded
=====================  ==============================================================
"""

from __future__ import annotations

import random
from collections.abc import Callable

from flare.evaluate.world.gen import Entity, Fact, World, WorldQuestion
from flare.evaluate.world.text import TEMPLATES

Made = tuple[str, list[Fact], list[str]]


class QuestionMaker:
    """Picks heads and builds each question's text, gold facts and sub-questions."""

    def __init__(self, world: World, rng: random.Random) -> None:
        self.w, self.rng = world, rng
        self.index = {(f.subject, f.relation): f for f in world.facts.values() if f.current}
        self.maker_of = {str(f.value): f for f in world.facts.values() if f.relation == "makes"}
        self.founded = {str(f.value): f for f in world.facts.values() if f.relation == "founded_by"}
        based: dict[str, list[Fact]] = {}
        for f in world.facts.values():
            if f.relation == "headquartered_in":
                based.setdefault(str(f.value), []).append(f)
        self.based_in = based

    def get(self, subject: str, relation: str) -> Fact:
        return self.index[(subject, relation)]

    def ent(self, fact: Fact) -> Entity:
        return self.w.entities[str(fact.value)]

    def choose(self, n: int, dev: int, kinds: Kinds | None = None) -> tuple[WorldQuestion, ...]:
        """``n`` questions, ``kinds`` (default :data:`KINDS`) in turn, the first ``dev`` marked dev, the rest test."""
        kinds = KINDS if kinds is None else kinds
        pools: dict[str, list[Entity]] = {}
        for qtype, (kind, _) in kinds.items():
            pool = [e for e in self.w.entities.values() if e.kind == kind and e.twin_of is None]
            self.rng.shuffle(pool)
            pools[qtype] = pool
        used: set[str] = set()
        out: list[WorldQuestion] = []
        while len(out) < n and any(pools.values()):
            for qtype, (_, make) in kinds.items():
                while pools[qtype] and len(out) < n:
                    head = pools[qtype].pop()
                    made = make(self, head) if head.id not in used else None
                    if made is None or not any(self.w.is_bridge(head.id, f) for f in made[1]):
                        continue  # not applicable, or every gold fact is found with the head's name
                    used.add(head.id)
                    text, facts, subs = made
                    out.append(WorldQuestion(
                        f"wq{len(out):03d}", text, qtype, "dev" if len(out) < dev else "test", head.id,
                        tuple(f.id for f in facts), tuple(subs), tuple(self.sentence(f) for f in facts)))
                    break
        if len(out) < n:
            raise ValueError(f"the world has room for {len(out)} questions, not {n}")
        return tuple(out)

    def sentence(self, f: Fact) -> str:
        """The fact in its plain (first) template, subject by name: one reference-answer sentence."""
        e = self.w.entities[f.subject]
        tpl = TEMPLATES.get(f"{e.kind}.{f.relation}", TEMPLATES.get(f.relation, ("",)))[0]
        pos = {"he": "his", "she": "her"}.get(e.pronoun, "its")
        subject = e.inline[:1].upper() + e.inline[1:]
        return tpl.format(S=subject, name=e.inline, pos=pos, v=self.w.value_text(f))

    def pick(self, options: tuple[str, ...], **names: str) -> str:
        return self.rng.choice(options).format(**names)


def company_founder(m: QuestionMaker, c: Entity) -> Made:
    by, year = m.get(c.id, "founded_by"), m.get(c.id, "founded_year")
    person = m.ent(by)
    born = m.get(person.id, "born_in")
    town = m.ent(born)
    settled = m.get(town.id, "founded_year")
    text = m.pick((
        "Tell me about {c}: when and by whom was it founded, where was its founder born, and when was that town "
        "founded?",
        "Write a short history of {c}, covering who founded it and in which year, the town where the founder "
        "was born, and when that town itself was founded.",
    ), c=c.name)
    subs = [f"Who founded {c.name}?", f"When was {c.name} founded?", f"Where was {person.name} born?",
            f"When was {town.name} founded?"]
    return text, [by, year, born, settled], subs


def company_product(m: QuestionMaker, c: Entity) -> Made:
    makes, based = m.get(c.id, "makes"), m.get(c.id, "headquartered_in")
    product = m.ent(makes)
    launch, price = m.get(product.id, "launch_year"), m.get(product.id, "price")
    text = m.pick((
        "What does {c} make? Name its product, say when that product was launched and what it costs today, and "
        "where {c} has its head office.",
        "Describe the business of {c}: its product, the year that product came out, its current price, and the "
        "town where the company is based.",
    ), c=c.name)
    subs = [f"What does {c.name} make?", f"When was the {product.bare} launched?",
            f"How much does the {product.bare} cost?", f"Where is {c.name} headquartered?"]
    return text, [makes, launch, price, based], subs


def product_maker(m: QuestionMaker, p: Entity) -> Made | None:
    makes = m.maker_of.get(p.id)
    if makes is None:
        return None
    company = m.w.entities[makes.subject]
    based = m.get(company.id, "headquartered_in")
    town = m.ent(based)
    people, warranty = m.get(town.id, "population"), m.get(p.id, "warranty")
    text = m.pick((
        "Tell me about the {p}: which company makes it, what warranty it comes with, where its maker has its head "
        "office, and how many people live in that town today.",
        "Who makes the {p} and how long is its warranty? Also say in which town the maker is based and what the "
        "current population of that town is.",
    ), p=p.bare)
    subs = [f"Which company makes the {p.bare}?", f"How long is the warranty of the {p.bare}?",
            f"Where is {company.name} headquartered?", f"How many people live in {town.name}?"]
    return text, [makes, warranty, based, people], subs


def person_profile(m: QuestionMaker, p: Entity) -> Made | None:
    by = m.founded.get(p.id)
    if by is None:
        return None
    company = m.w.entities[by.subject]
    year, born, staff = m.get(p.id, "born_year"), m.get(p.id, "born_in"), m.get(company.id, "employees")
    pron = {"he": "he", "she": "she"}[p.pronoun]
    text = m.pick((
        "Write a short profile of {p}: when and where {pron} was born, which company {pron} founded, and how many "
        "people that company employs today.",
        "Who is {p}? Give {pron_pos} year and town of birth, the company {pron} founded, and that company's "
        "current number of employees.",
    ), p=p.name, pron=pron, pron_pos={"he": "his", "she": "her"}[p.pronoun])
    subs = [f"When was {p.name} born?", f"Where was {p.name} born?", f"Which company did {p.name} found?",
            f"How many people does {company.name} employ?"]
    return text, [year, born, by, staff], subs


def town_profile(m: QuestionMaker, t: Entity) -> Made | None:
    based = m.based_in.get(t.id, [])
    if len(based) != 1:
        return None  # "the company based there" must be one company
    company = m.w.entities[based[0].subject]
    region, river = m.get(t.id, "region"), m.get(t.id, "river")
    year = m.get(company.id, "founded_year")
    text = m.pick((
        "Describe {t}: which region it belongs to, which river it lies on, which company has its head office "
        "there, and when that company was founded.",
        "Tell me about the town of {t}: its region, its river, the company headquartered there and that "
        "company's founding year.",
    ), t=t.name)
    subs = [f"Which region is {t.name} in?", f"Which river does {t.name} lie on?",
            f"Which company is headquartered in {t.name}?", f"When was {company.name} founded?"]
    return text, [region, river, based[0], year], subs


def founder_birthplace(m: QuestionMaker, c: Entity) -> Made:
    person = m.ent(m.get(c.id, "founded_by"))
    born = m.get(person.id, "born_in")
    text = m.pick(("In which town was the founder of {c} born?", "Where was the person who founded {c} born?"),
                  c=c.name)  # fmt: skip
    return text, [born], [text]


def _maker_fact(m: QuestionMaker, p: Entity, relation: str) -> Fact | None:
    """``relation`` of the company that makes product ``p`` (None: nobody makes it)."""
    makes = m.maker_of.get(p.id)
    return None if makes is None else m.get(makes.subject, relation)


def maker_office(m: QuestionMaker, p: Entity) -> Made | None:
    based = _maker_fact(m, p, "headquartered_in")
    if based is None:
        return None
    text = m.pick(("In which town does the company that makes the {p} have its head office?",
                   "Where is the maker of the {p} headquartered?"), p=p.bare)  # fmt: skip
    return text, [based], [text]


def maker_founder(m: QuestionMaker, p: Entity) -> Made | None:
    by = _maker_fact(m, p, "founded_by")
    if by is None:
        return None
    text = m.pick(("Who founded the company that makes the {p}?", "Who is the founder of the maker of the {p}?"),
                  p=p.bare)  # fmt: skip
    return text, [by], [text]


def founded_staff(m: QuestionMaker, p: Entity) -> Made | None:
    by = m.founded.get(p.id)
    if by is None:
        return None
    staff = m.get(by.subject, "employees")
    text = m.pick(("How many people does the company founded by {p} employ?",
                   "How many employees does the company that {p} founded have today?"), p=p.name)  # fmt: skip
    return text, [staff], [text]


def based_founded(m: QuestionMaker, t: Entity) -> Made | None:
    based = m.based_in.get(t.id, [])
    if len(based) != 1:
        return None
    year = m.get(based[0].subject, "founded_year")
    text = m.pick(("In which year was the company that has its head office in {t} founded?",
                   "When was the company headquartered in {t} founded?"), t=t.name)  # fmt: skip
    return text, [year], [text]


Kinds = dict[str, tuple[str, Callable[[QuestionMaker, Entity], Made | None]]]
"""Question types: each names the kind of its head entity and the function that writes it."""

KINDS: Kinds = {
    "company_founder": ("company", company_founder),
    "company_product": ("company", company_product),
    "product_maker": ("product", product_maker),
    "person_profile": ("person", person_profile),
    "town_profile": ("town", town_profile),
}
BRIDGE_KINDS: Kinds = {
    "founder_birthplace": ("company", founder_birthplace),
    "maker_office": ("product", maker_office),
    "maker_founder": ("product", maker_founder),
    "founded_staff": ("person", founded_staff),
    "based_founded": ("town", based_founded),
}
