"""flare.toml, then FLARE_* variables: precedence, discovery and one-line errors naming the source."""

from __future__ import annotations

from pathlib import Path

import pytest

from flare.config_file import config_path, configured_values, load_settings
from flare.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_file_then_environment_in_that_order(tmp_path: Path) -> None:
    cfg = write(tmp_path / "f.toml", 'theta = 0.3\nk = 2\nkeep_first_docs = true\nmethod = "single"\n')
    s = load_settings(cfg, env={"FLARE_K": "5", "FLARE_THREADS": "1", "FLARE_DATA": "/x"})
    assert (s.theta, s.k, s.keep_first_docs, s.method) == (0.3, 5, True, "single")
    assert s.beta == 0.4  # untouched settings keep their defaults
    assert configured_values(cfg, env={}) == {"theta": 0.3, "k": 2, "keep_first_docs": True, "method": "single"}


def test_the_file_is_found_by_flag_then_variable_then_current_directory(tmp_path: Path) -> None:
    here = write(tmp_path / "flare.toml", "theta = 0.1\n")
    other = write(tmp_path / "other.toml", "theta = 0.2\n")
    assert config_path(env={}, cwd=tmp_path) == here
    assert config_path(env={"FLARE_CONFIG": str(other)}, cwd=tmp_path) == other
    assert config_path(here, env={"FLARE_CONFIG": str(other)}, cwd=tmp_path) == here
    assert config_path(env={}, cwd=tmp_path / "none") is None
    assert load_settings(env={}, cwd=tmp_path).theta == 0.1
    assert load_settings(env={"FLARE_CONFIG": str(other)}, cwd=tmp_path).theta == 0.2
    assert load_settings(env={}, cwd=tmp_path / "none").theta == 0.8


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("thetta = 0.3\n", r"f.toml: unknown setting 'thetta' \(hint: did you mean 'theta'\?\)"),
        ("theta = 3\n", r"f.toml: theta=3.0 is out of range \(hint: theta is a probability"),
        ('k = "many"\n', r"f.toml: k='many' is not an integer"),
        ('trigger = "loud"\n', r"f.toml: trigger='loud' is not a valid choice \(hint: choose one of: min"),
        ("theta = \n", r"f.toml is not valid TOML: .*line 1"),
        ("[server]\nport = 1\n", r"f.toml: unknown setting 'server'"),
    ],
)
def test_file_errors_name_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    cfg = write(tmp_path / "f.toml", text)
    with pytest.raises(ConfigError, match=message) as err:
        load_settings(cfg, env={})
    assert "\n" not in str(err.value)


def test_environment_errors_name_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"environment FLARE_THETA: theta='high' is not a number"):
        load_settings(env={"FLARE_THETA": "high"}, cwd=tmp_path)
    with pytest.raises(ConfigError, match=r"environment FLARE_KEEP_FIRST_DOCS: .* true or false"):
        load_settings(env={"FLARE_KEEP_FIRST_DOCS": "sometimes"}, cwd=tmp_path)


def test_a_missing_or_unreadable_file_is_an_error_not_silence(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config file not found: .*nope.toml \(hint: create it"):
        load_settings(tmp_path / "nope.toml", env={})
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(env={"FLARE_CONFIG": str(tmp_path / "nope.toml")}, cwd=tmp_path)
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe theta")
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_settings(binary, env={})
