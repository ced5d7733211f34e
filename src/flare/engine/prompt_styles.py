"""What the built-in prompt shows a method that reads its own retrieval requests (M8, M9).

``decompose`` (self-ask) searches with each ``Follow up:`` question the model writes, and
``instruct`` (FLARE instruct) with each ``[Search(query)]`` tag; neither can work unless the
prompt tells the model to write them and shows how. Each style here is one sentence added to
the instruction and exemplars annotated that way, in English and Chinese. The method table
(:mod:`flare.engine.methods`) says which style each method needs; the facts in the exemplars
are made up, so none of them can leak into an answer as if it were a found fact.
"""

from __future__ import annotations

from typing import Literal, get_args

PromptStyle = Literal["answer", "decompose", "instruct"]
PROMPT_STYLES: tuple[str, ...] = get_args(PromptStyle)

Exemplar = tuple[tuple[tuple[str, str], ...], str, str]
"""((title, text), ...) documents, the question, the annotated answer."""

_CLINIC_EN = (
    ("Orchard Street Clinic", "Orchard Street Clinic is run by Dr. Lena Vos. It opens at 8 a.m. on weekdays."),
    ("Dr. Lena Vos", "Dr. Lena Vos trained as a paediatrician in Utrecht and joined the clinic in 2019."),
)
_CLINIC_Q_EN = "Where did the doctor who runs Orchard Street Clinic train?"
_CLINIC_ZH = (
    ("青石社区诊所", "青石社区诊所由林雅医生负责，工作日早上8点开门。"),
    ("林雅医生", "林雅医生在杭州接受儿科医生培训，2019年加入青石社区诊所。"),
)
_CLINIC_Q_ZH = "负责青石社区诊所的医生在哪里接受培训？"

STYLE_INSTRUCTIONS: dict[str, str] = {
    "decompose": "When the question needs more than one fact, first write \"Follow up:\" and a question "
    "about one fact, then \"Intermediate answer:\" and its answer from the search results.",
    "instruct": "When you need a fact that the search results do not give yet, write [Search(a question "
    "about it)] and the search results for it will be shown to you.",
}

STYLE_EXEMPLARS: dict[str, tuple[Exemplar, ...]] = {
    "decompose": (
        (_CLINIC_EN, _CLINIC_Q_EN,
         "Follow up: Who runs Orchard Street Clinic? Intermediate answer: Orchard Street Clinic is run by "
         "Dr. Lena Vos. Follow up: Where did Dr. Lena Vos train? Intermediate answer: Dr. Lena Vos trained "
         "as a paediatrician in Utrecht."),
        (_CLINIC_ZH, _CLINIC_Q_ZH,
         "Follow up: 谁负责青石社区诊所？ Intermediate answer: 青石社区诊所由林雅医生负责。"
         "Follow up: 林雅医生在哪里接受培训？ Intermediate answer: 林雅医生在杭州接受儿科医生培训。"),
    ),
    "instruct": (
        (_CLINIC_EN, _CLINIC_Q_EN,
         "[Search(Who runs Orchard Street Clinic?)] Orchard Street Clinic is run by Dr. Lena Vos. "
         "[Search(Where did Dr. Lena Vos train?)] She trained as a paediatrician in Utrecht."),
        (_CLINIC_ZH, _CLINIC_Q_ZH,
         "[Search(谁负责青石社区诊所？)]青石社区诊所由林雅医生负责。"
         "[Search(林雅医生在哪里接受培训？)]她在杭州接受儿科医生培训。"),
    ),
}  # fmt: skip
