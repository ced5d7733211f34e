"""Method specs for ``flare eval``: a name plus setting overrides, and the paper's ablations (E3, E4).

A spec is ``NAME`` or ``NAME:key=value,key=value``, where NAME is a policy (``none``,
``single``, ``flare``, ``previous-window``, ``previous-sentence``, ``decompose``, ``instruct``;
``-`` and ``_`` are interchangeable) or one of these shorthands:

* ``flare-explicit`` — FLARE direct with explicit (question) queries: ``flare:query=explicit``;
* ``flare-every`` — forward-looking every sentence, i.e. ``flare:theta=1``.

Examples: ``flare:theta=0.4``, ``flare:beta=0,query_with_question=true``, ``previous-window:window_tokens=32``.
The label of a spec (its text, normalised) names it in results and reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flare.config import Settings, setting_info
from flare.engine.methods import method_entry, registered_methods
from flare.errors import ConfigError

SHORTHANDS: dict[str, tuple[str, dict[str, Any]]] = {
    "flare-explicit": ("flare", {"query": "explicit"}),
    "flare-every": ("flare", {"theta": 1.0}),
}
ALL_METHODS = ("none", "single", "flare", "flare-explicit", "flare-every", "previous-window",
               "previous-sentence", "decompose", "instruct")
THETAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
BETAS = (0.0, 0.2, 0.4, 0.6)

# The paper's ablations (Section 6 / Tables 6-7, Figures 5-6), each as a list of specs.
ABLATIONS: dict[str, tuple[str, ...]] = {
    "baselines": ALL_METHODS,
    # Next (forward-looking, unmasked) vs previous sentence as the query, both every sentence.
    "query-sentence": ("previous-sentence", "flare:theta=1,beta=0"),
    "beta": tuple(f"flare:beta={b}" for b in BETAS),
    "theta": tuple(f"flare:theta={t}" for t in THETAS),
    "query": ("flare", "flare-explicit"),
}


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """One method to evaluate: its label, the policy name and its setting overrides."""

    label: str
    method: str
    overrides: tuple[tuple[str, Any], ...] = ()

    def settings(self, base: Settings) -> Settings:
        """``base`` with this method and its overrides applied (overrides win)."""
        return base.with_overrides(method=self.method, **dict(self.overrides))


def parse_method(spec: str) -> MethodSpec:
    """Parse ``NAME[:key=value,...]``; unknown names or settings raise :class:`ConfigError`."""
    name, _, rest = spec.strip().partition(":")
    key = name.strip().lower().replace("_", "-")
    if key in SHORTHANDS:
        method, preset = SHORTHANDS[key]
        overrides = dict(preset)
    else:
        try:
            method, overrides = method_entry(key).name, {}
        except ConfigError:
            known = sorted({*ALL_METHODS, *(m.replace("_", "-") for m in registered_methods())})
            raise ConfigError(f"unknown method {name!r}", f"choose one of: {', '.join(known)}") from None
    given: list[str] = []
    for item in filter(None, (p.strip() for p in rest.split(","))):
        k, eq, v = item.partition("=")
        if not eq:
            raise ConfigError(f"bad setting {item!r} in method {spec!r}", "write key=value, e.g. flare:theta=0.4")
        try:
            overrides[k.strip()] = setting_info(k.strip()).parse(v)
        except ConfigError as err:
            raise ConfigError(f"method {spec!r}: {err.message}", err.hint) from None
        given.append(f"{k.strip()}={v.strip()}")
    label = f"{key}:{','.join(given)}" if given else key
    ms = MethodSpec(label, method, tuple(overrides.items()))
    ms.settings(Settings())  # validate names and ranges now, not after the model has loaded
    return ms


def expand(methods: tuple[str, ...], ablations: tuple[str, ...], sweeps: tuple[str, ...]) -> list[MethodSpec]:
    """All specs asked for by ``--method``, ``--ablation`` and ``--sweep key=v1,v2`` (deduplicated)."""
    texts = list(methods)
    for a in ablations:
        if a not in ABLATIONS:
            raise ConfigError(f"unknown ablation {a!r}", f"choose one of: {', '.join(ABLATIONS)}")
        texts.extend(ABLATIONS[a])
    for sweep in sweeps:
        k, eq, values = sweep.partition("=")
        if not eq or not values:
            raise ConfigError(f"bad sweep {sweep!r}", "write e.g. --sweep theta=0,0.2,0.4")
        texts.extend(f"flare:{k.strip()}={v.strip()}" for v in values.split(",") if v.strip())
    out: dict[str, MethodSpec] = {}
    for t in texts or ["flare"]:
        ms = parse_method(t)
        out.setdefault(ms.label, ms)
    return list(out.values())
