"""The settings table: every field documented, typed values checked, text parsed per field."""

from __future__ import annotations

from dataclasses import fields

import pytest

from flare.config import TRIGGERS, Settings, setting_info, setting_infos
from flare.errors import ConfigError


def test_every_setting_declares_its_help_and_request_policy() -> None:
    """A field added without ``setting(...)`` would silently stay off requests: this catches it."""
    infos = {i.name: i for i in setting_infos()}
    assert list(infos) == [f.name for f in fields(Settings)]
    for f in fields(Settings):
        assert f.metadata.get("help"), f"Settings.{f.name} has no help text: declare it with setting()"
        assert f.metadata.get("request") in ("free", "lower", "stricter", "operator"), f.name
    assert infos["trigger"].choices == TRIGGERS and infos["trigger"].choices[0] == "min"
    assert infos["k"].flags == ("-k", "--k") and infos["max_retries_per_gap"].flags == ("--max-retries-per-gap",)
    assert infos["max_seconds"].request == "lower" and infos["theta"].request == "free"
    assert infos["theta"].env == "FLARE_THETA"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"theta": 1.5}, "theta=1.5 is out of range.*probability in \\[0, 1\\]"),
        ({"k": 0}, "k=0 is out of range"),
        ({"max_retrievals": -1}, "max_retrievals=-1 is out of range.*not be negative"),
        ({"max_seconds": 0}, "max_seconds=0.0 is out of range.*above 0"),
        ({"trigger": "loud"}, "trigger='loud' is not a valid choice.*min, mean"),
        ({"theta": "0.4"}, "theta='0.4' is not a number.*theta=0.8"),
        ({"keep_first_docs": 1}, "keep_first_docs=1 is not true or false.*keep_first_docs=false"),
        ({"k": True}, "k=True is not an integer"),
        ({"language": "fr"}, "language='fr' is not a valid choice"),
    ],
)
def test_invalid_values_raise_one_clear_error(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings(**changes)  # type: ignore[arg-type]


def test_an_int_for_a_float_setting_is_a_float() -> None:
    s = Settings(max_seconds=30, theta=1)
    assert s.max_seconds == 30.0 and isinstance(s.max_seconds, float) and isinstance(s.theta, float)


def test_text_values_are_parsed_by_the_setting_type() -> None:
    assert setting_info("theta").parse(" 0.25 ") == 0.25
    assert setting_info("k").parse("5") == 5
    assert setting_info("keep_first_docs").parse("Yes") is True
    assert setting_info("query_with_question").parse("off") is False
    assert setting_info("query").parse("explicit") == "explicit"
    with pytest.raises(ConfigError, match=r"k='5\.5' is not an integer"):
        setting_info("k").parse("5.5")
    with pytest.raises(ConfigError, match="is not true or false"):
        setting_info("keep_first_docs").parse("maybe")
    with pytest.raises(ConfigError, match="out of range"):
        setting_info("beta").parse("2")
    with pytest.raises(ConfigError, match=r"unknown setting 'thetta'.*did you mean 'theta'"):
        setting_info("thetta")
