"""Settings for one FLARE run: one frozen record shared by the Python API, the CLI and the server.

Defaults follow the paper's multi-hop setting (Table 9: θ=0.8, β=0.4, implicit queries, no
"combine single- and multi-time retrieval"); the paper uses θ=0.4 for StrategyQA and explicit
queries with combined retrieval for ASQA. Small local models put a sentence's first word and
function words well below 0.8, so calibrate θ per model (``flare eval`` sweeps it).

Low token probability is a *trigger signal*, not a verdict on truth: a confident sentence can be
wrong and an unsure one right. It only decides when to look things up.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from functools import cache
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from flare.errors import ConfigError

Trigger = Literal["min", "mean", "dynamic", "content", "support"]
QueryMode = Literal["implicit", "explicit"]
OnMissing = Literal["stop", "omit", "keep"]
Verify = Literal["off", "flag", "drop", "retry"]
VERIFY_ORDER = ("off", "flag", "retry", "drop")
"""``verify`` from lenient to strict: a server request may only move it right (``stricter``)."""
Language = Literal["auto", "en", "zh"]
Layout = Literal["auto", "plain", "chatml"]
NewDocs = Literal["before", "after"]
RequestPolicy = Literal["free", "lower", "stricter", "operator"]
"""How a server request may set a setting: ``free`` any valid value; ``lower`` only below the
server's value (budgets; a higher value is clamped); ``stricter`` only towards the strict end of
an ordered choice (a laxer value is refused); ``operator`` not at all."""

DEFAULT_MODEL = "qwen1.5b"
"""The embedded default model spec (docs/results/qwen/PROTOCOL.md says how it was chosen)."""

TRIGGERS: tuple[str, ...] = get_args(Trigger)
QUERY_MODES: tuple[str, ...] = get_args(QueryMode)
ON_MISSING: tuple[str, ...] = get_args(OnMissing)

T = TypeVar("T")


def setting(
    default: T,
    help: str,
    *,
    request: RequestPolicy = "free",
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    order: tuple[str, ...] = (),
    flags: tuple[str, ...] = (),
) -> T:
    """A :class:`Settings` field with what the CLI, the server and the config file need to know.

    ``low``/``high`` bound a number (``low_open``: the bound itself is not allowed); ``order``
    lists a ``stricter`` choice from lenient to strict (default: the ``Literal``'s order);
    ``flags`` overrides the CLI spelling (default ``--name-with-dashes``).
    """
    meta = {"help": help, "request": request, "low": low, "high": high, "low_open": low_open,
            "order": order, "flags": flags}  # fmt: skip
    return field(default=default, metadata=meta)


@dataclass(frozen=True, slots=True)
class Settings:
    """Every knob of the loop. Build with keywords; invalid values raise :class:`ConfigError`.

    Each field carries its help text, its bounds and how a server request may set it
    (:func:`setting`); :func:`setting_infos` turns them into the CLI options, the server's request
    fields and the config file's keys, so a new field needs no other code to be reachable.

    Example::

        >>> s = Settings(theta=0.5, beta=0.3, max_retrievals=4)
        >>> s.with_overrides(k=5).k
        5
    """

    method: str = setting(
        "flare", "Retrieval method: a name in the method table (flare, single, none, previous_window, "
        "previous_sentence, decompose, instruct, or a registered one).")
    # When to retrieve (M2): "min" = any token p < theta; "mean" = mean(p) < theta, i.e.
    # mean(1-p) > 1-theta; "dynamic" = theta for fact-dense sentences (numbers, dates, names)
    # and theta_prose for connective prose; "content" = the min rule over content words only;
    # "support" (beyond the paper, C6) = draft with the question's documents and retrieve only
    # when the support checker finds the draft unsupported by them (theta is not used).
    theta: float = setting(0.8, "Retrieve when a drafted token's probability is below this (0 never, 1 always).",
                           low=0, high=1)
    # Default "support": chosen on development data over min (docs/results/verify/PROTOCOL.md):
    # at 270M, token probability does not tell right from wrong, the documents' support does.
    trigger: Trigger = setting("support", "Trigger rule: min (paper), mean, dynamic (theta for fact-dense "
                               "sentences, theta_prose otherwise), content (content words only) or support "
                               "(retrieve when the question's documents do not back the draft).")
    theta_prose: float = setting(0.4, "The dynamic trigger's theta for sentences without numbers or names.",
                                 low=0, high=1)
    # The end of the answer is a drafted token too: the backend cuts the end of the line as a stop
    # sequence, so without this its probability never reaches the trigger (see engine/ending.py).
    judge_end: bool = setting(True, "Judge the end of the answer like any drafted token: an end drafted "
                              "with p < theta retrieves and regenerates (backends that can score).")
    # What to ask (M3/M4): tokens with p < beta are masked (implicit) or become question targets.
    beta: float = setting(0.4, "Mask drafted words below this probability when forming the query.", low=0, high=1)
    query: QueryMode = setting("implicit", "Query from the masked draft (implicit) or LM-written questions "
                               "(explicit).")
    query_with_question: bool = setting(False, "Prefix every follow-up query with the question.")
    k: int = setting(3, "Passages per retrieval.", request="lower", low=1, high=20, flags=("-k", "--k"))
    keep_first_docs: bool = setting(False, "Keep the question's documents in every later prompt (M5).")
    # Chosen on development data (docs/results/qwen/PROTOCOL.md, round 3): bridge 0.25 -> 0.45,
    # 2WikiMultihopQA 0.233 -> 0.267, world long form 0.613 -> 0.675 fact recall.
    follow_names: bool = setting(True, "trigger=support: search for each name an accepted sentence brings in "
                                 "(with the question's words it lacks) and add the passages to later drafts.")
    # Round 5 (docs/results/qwen/PROTOCOL.md) tried 1: bridge development questions 0.45 -> 0.30
    # with no fewer prompt tokens (a name's article comes in chunks; the fact sat in another).
    # Round 7 chose 2 over 3: the third passage was cited 2 times in 80 on development questions;
    # with 2, 13-30% fewer tokens per answer and no development set scored lower.
    follow_k: int = setting(2, "follow_names: passages read for each name (the best matches).",
                            request="lower", low=1, high=20)
    # Round 9 (docs/results/qwen/PROTOCOL.md): a name the answer brings in is often one whose own
    # passage the prompt already holds (a rewrite or the question's search read it); its search then
    # reads the next best matches, other entities that share a word of its name. On development data
    # skipping them read 15%, 4% and 4% fewer tokens per answer within the quality margins; narrowed
    # then to the name's own page, as the question's page often outranks it.
    skip_known_names: bool = setting(True, "follow_names: a name whose own page (titled by it) is its best match "
                                     "and already in the prompt reads only the rest of that page.")
    # Round 6 (docs/results/qwen/PROTOCOL.md): the sentence after the last hop is usually "So the
    # answer is <what the answer just said>", and following the names it repeats read passages it
    # never used (2WikiMultihopQA: 0.59 such steps per answer, ~300 prompt tokens each).
    draft_before_follow: bool = setting(False, "follow_names: draft the next sentence before searching for the "
                                        "last sentence's names; a backed draft that only repeats names and "
                                        "numbers the answer has said is kept without the search.")
    # Round 10 (docs/results/qwen/PROTOCOL.md): of the passages read for names before a draft that
    # was then accepted, 32 of 180 (2WikiMultihopQA) and 47 of 127 (world) were cited anywhere in
    # the answer. Rejected on development data: 8% fewer tokens on 2WikiMultihopQA, 8% more on
    # long answers, whose early drafts mostly needed the names' passages (more rewrites and flags).
    lazy_follow: bool = setting(False, "follow_names: search for the names the answer brought in only when "
                                "the next sentence, drafted from the passages at hand, is not backed by "
                                "them (a bare restatement waits for the names too).")
    # Rounds 11-12 (docs/results/qwen/PROTOCOL.md): alone (without draft_before_follow) it read 10%
    # fewer tokens per 2WikiMultihopQA development answer (Wikipedia paragraphs of about four
    # sentences) and scored level on the bridge and long-form world sets.
    trim_found: bool = setting(True, "trigger=support: passages found during the answer (for names or rewrites) "
                               "are read cut to their first sentence and the sentences sharing a word with "
                               "the query.")
    # Round 14 (docs/results/qwen/PROTOCOL.md): a found Wikipedia paragraph often keeps three of
    # its four sentences, since most share one of the query's words ("born", a name's first part).
    trim_sentences: int = setting(0, "trim_found: most sentences an excerpt keeps besides the first, those "
                                  "sharing the most words with the query (0: every one that shares a word).",
                                  low=0)
    # Round 8 (docs/results/qwen/PROTOCOL.md): a search made for a name or a rewrite returns its
    # best passages whatever they score, and a query on a common word ("English born") brings in
    # a weak match that is then read in full and seldom cited. 0.5 met the development rule
    # (3-5% fewer tokens per answer); 0.75 cut bridge passages that score below the product's own.
    found_floor: float = setting(0.5, "trigger=support: a passage found during the answer (for a name or a "
                                 "rewrite) is read only if it scores at least this share of its search's best "
                                 "hit (0: every hit).", low=0, high=1)
    # Where the evidence trigger's rewrite reads the passages its search found: "before" the
    # question, as every other prompt (which re-evaluates the question and the answer so far), or
    # "after" the answer so far, as a follow-up turn of the draft's prompt (whose cache is reused).
    new_docs: NewDocs = setting("before", "Rewrite prompt of trigger=support (ChatML models): the new passages "
                                "before the question, or after the answer so far (the draft's cached "
                                "prompt is reused).")
    # M10 option: keep the draft (marked ungrounded) when the new documents back less than
    # min_relevance of the query's words (the support checker's coverage: any retriever, 0..1).
    conditional_commit: bool = setting(
        False, "Keep the draft (marked ungrounded) when the new documents back too little of the query.")
    min_relevance: float = setting(0.5, "Share of the query's words the new documents must back (conditional "
                                   "commit).", low=0, high=1)
    on_missing: OnMissing = setting("stop", "When a search finds nothing: stop the answer, omit the sentence and "
                                    "go on, or keep the draft marked ungrounded.")
    # C5/C6: check every sentence against the passages it cites. "flag" marks unsupported ones,
    # "drop" removes them before they are accepted, "retry" searches once more with the question
    # and the unsupported words and rewrites the sentence, then does what retry_then says.
    # Default "flag", chosen on development data (docs/results/verify): it cut the world's
    # cited-but-unsupported share from 0.45 to 0.10 at the same fact recall and ASQA STR-EM.
    verify: Verify = setting("flag", "Check each sentence against its passages: off, flag (mark unsupported "
                             "ones), drop (remove them) or retry (search again once, then retry_then).",
                             request="stricter", order=VERIFY_ORDER)
    retry_then: Literal["flag", "drop"] = setting("flag", "After a retry that still fails: flag or drop.",
                                                  request="stricter")
    # Off by default: on the world's development sentences the lift never made the checker better
    # (docs/results/verify), and it costs one scoring pass per checked sentence.
    evidence_lift: bool = setting(False, "Let the model's evidence lift back paraphrased words (when the backend "
                                  "can score).")
    # The checker's calibration (docs/results/verify/calibrate.py: highest F1, ties to the higher
    # value) chose 0.8 on Gemma-3-270m's world sentences and 0.6 on Qwen2.5-1.5B's 518 development
    # sentences (precision 0.74 against 0.64, the same recall 0.86). As the support trigger's
    # acceptance test, 0.6 kept more drafts unsearched and bridge development EM fell 0.35 -> 0.30
    # (round 13, docs/results/qwen/PROTOCOL.md), so the trigger's stays 0.8 (verify_coverage is
    # the shown verdict's). The operator's choice: a laxer request could unmark a sentence.
    support_coverage: float = setting(0.8, "Support trigger: weighted share of a draft's claims its passages must "
                                      "back for it to be kept unsearched; a name or number missing fails it "
                                      "whatever this is.", request="operator", low=0, high=1)
    # Round 14 (docs/results/qwen/PROTOCOL.md): the checker's verdict on a sentence about to be
    # shown (verify's mark, drop or retry) at its own coverage, calibrated for Qwen (0.6) while
    # the support trigger's acceptance test keeps support_coverage. On development questions it
    # changed no answer's score and cut the world's flagged share 0.182 -> 0.159 with the truth's
    # unmarked-but-unsupported share unchanged (0.010). The operator's choice, as support_coverage's.
    verify_coverage: float = setting(0.6, "Support checker for the verdict verify acts on (mark, drop or retry): "
                                     "the weighted share of a shown sentence's claims its passages must "
                                     "back; support_coverage stays the support trigger's test.",
                                     request="operator", low=0, high=1)
    repeat_ngram: int = setting(4, "Cut a sentence where a run of this many words repeats (0: never).", low=0)
    # Budgets (C2). Each cap exists so a single question can never run away with the machine.
    max_retrievals: int = setting(8, "Most searches per answer.", request="lower", low=0)
    max_retries_per_gap: int = setting(1, "Most searches for the same information gap.", request="lower", low=0)
    max_output_tokens: int = setting(256, "Most tokens in the answer.", request="lower", low=1)
    max_sentences: int = setting(12, "Most sentences in the answer.", request="lower", low=1)
    max_seconds: float = setting(120.0, "Wall-time budget of one answer, in seconds.", request="lower",
                                 low=0, low_open=True)
    # The paper's look-ahead length; we also stop at sentence end.
    max_sentence_tokens: int = setting(64, "Most tokens per drafted sentence.", request="lower", low=1)
    # Chinese sentences run longer in tokens (Gemma-3: ~1.5 Han characters per token; byte-level
    # vocabularies 1 or fewer), and a policy sentence of 80-120 characters is common.
    max_sentence_tokens_zh: int = setting(160, "Most tokens per drafted sentence when answering in Chinese.",
                                          request="lower", low=1)
    # The previous-window baseline retrieves every l=16 tokens (paper).
    window_tokens: int = setting(16, "Tokens per window of the previous_window method.", low=1)
    language: Language = setting("auto", "Answer language (prompts, look-ahead cap): auto (the question's), en "
                                 "or zh.")
    # Which turn format flare's built-in prompts use. "auto" follows the chat template the model
    # (or its server) reports; served models that report none need it set (SmolLM2: chatml).
    layout: Layout = setting("auto", "Prompt layout: chatml (chat turns) or plain (one few-shot text); auto "
                             "follows the model's chat template.", request="operator")
    # The model spec (flare.lm.registry): a deployment picks its model in flare.toml or FLARE_MODEL;
    # a command's --model wins.
    model: str = setting(DEFAULT_MODEL, "Model spec: qwen1.5b, qwen0.5b, gemma3, smollm2, a path to a .gguf file, "
                         "xllamacpp:MODEL (parallel slots in-process), openai:URL#MODEL (a completions server), "
                         "openai-chat:URL#MODEL (any chat API) or hf:MODEL (transformers).", request="operator")

    def __post_init__(self) -> None:
        if not isinstance(self.method, str) or not self.method.strip():
            raise ConfigError("method must be a method name", "e.g. flare, single, none, instruct")
        for info in setting_infos():
            value = info.check(getattr(self, info.name))
            object.__setattr__(self, info.name, value)  # an int given for a float becomes a float

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with some fields changed (``None`` leaves a field as is); unknown names raise."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(unknown)}", f"known: {', '.join(sorted(known))}")
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class SettingInfo:
    """One row of the settings table, derived from a :class:`Settings` field and its metadata."""

    name: str
    kind: type  # bool, int, float or str
    default: Any
    help: str
    request: RequestPolicy
    choices: tuple[str, ...] = ()  # a Literal's values, in order
    order: tuple[str, ...] = ()  # a ``stricter`` choice, lenient to strict
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    flags: tuple[str, ...] = ()

    @property
    def env(self) -> str:
        """The environment variable that sets it: ``FLARE_THETA`` for ``theta``."""
        return f"FLARE_{self.name.upper()}"

    @property
    def example(self) -> str:
        """The default as one would write it in a config file or on the command line."""
        return str(self.default).lower() if self.kind is bool else str(self.default)

    def check(self, value: Any) -> Any:
        """``value`` if it has the right type, is in range and among the choices; else ConfigError."""
        n = self.name
        if self.kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, self.kind) or (self.kind is not bool and isinstance(value, bool)):
            raise ConfigError(f"{n}={value!r} is not {_KIND_WORDS[self.kind]}", f"e.g. {n}={self.example}")
        if self.choices and value not in self.choices:
            raise ConfigError(f"{n}={value!r} is not a valid choice", f"choose one of: {', '.join(self.choices)}")
        if self.kind in (int, float):
            number = float(value)  # type: ignore[arg-type]  # value is an int or a float here
            low_ok = self.low is None or number > self.low or (number == self.low and not self.low_open)
            if not low_ok or (self.high is not None and number > self.high):
                raise ConfigError(f"{n}={value} is out of range", self._range_hint())
        return value

    def parse(self, text: str) -> Any:
        """A value from text (an environment variable, ``--set``, an eval spec), then :meth:`check`."""
        raw = text.strip()
        value: Any = raw
        if self.kind is bool:
            if raw.lower() not in _BOOLS:
                raise ConfigError(f"{self.name}={text!r} is not true or false", f"e.g. {self.name}=true")
            value = _BOOLS[raw.lower()]
        elif self.kind in (int, float):
            try:
                value = self.kind(raw)
            except ValueError:
                raise ConfigError(f"{self.name}={text!r} is not {_KIND_WORDS[self.kind]}",
                                  f"e.g. {self.name}={self.example}") from None  # fmt: skip
        return self.check(value)

    def _range_hint(self) -> str:
        if (self.low, self.high) == (0, 1):
            return f"{self.name} is a probability in [0, 1]"
        if self.low is not None and self.high is not None:
            return f"{self.name} is between {self.low:g} and {self.high:g}"
        if self.low_open:
            return f"give {self.name} a value above {self.low:g}"
        if self.low == 0:
            return f"{self.name} must not be negative; use 0 to disable, or a positive integer"
        return f"{self.name} must be at least {self.low:g}"


_KIND_WORDS: dict[type, str] = {bool: "true or false", int: "an integer", float: "a number", str: "text"}
_BOOLS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}


@cache
def setting_infos() -> tuple[SettingInfo, ...]:
    """The settings table, in field order: what the CLI, the server and the config file offer."""
    hints = get_type_hints(Settings)
    out = []
    for f in fields(Settings):
        hint, meta = hints[f.name], f.metadata
        choices: tuple[str, ...] = get_args(hint) if get_origin(hint) is Literal else ()
        kind = str if choices else hint
        if kind not in _KIND_WORDS:
            raise TypeError(f"Settings.{f.name}: {hint} is not bool, int, float, str or a Literal of str")
        request = meta.get("request", "operator")  # a field without metadata stays off requests
        order = tuple(meta.get("order") or choices)
        if request == "stricter" and not order:
            raise TypeError(f"Settings.{f.name}: a 'stricter' setting needs an ordered choice")
        out.append(SettingInfo(
            name=f.name, kind=kind, default=f.default, help=meta.get("help", ""), request=request,
            choices=choices, order=order, low=meta.get("low"), high=meta.get("high"),
            low_open=meta.get("low_open", False),
            flags=tuple(meta.get("flags") or (f"--{f.name.replace('_', '-')}",)),
        ))  # fmt: skip
    return tuple(out)


def setting_info(name: str) -> SettingInfo:
    """The table row of one setting; an unknown name raises :class:`ConfigError` with a suggestion."""
    for info in setting_infos():
        if info.name == name:
            return info
    raise ConfigError(f"unknown setting {name!r}", _suggest(name))


def _suggest(name: str) -> str:
    import difflib

    names = [i.name for i in setting_infos()]
    close = difflib.get_close_matches(name, names, n=1)
    return f"did you mean {close[0]!r}?" if close else f"known settings: {', '.join(names)}"
