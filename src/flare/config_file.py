"""Settings from a config file and the environment: ``flare.toml``, then ``FLARE_*``, then flags.

Precedence, lowest first: the defaults of :class:`~flare.config.Settings`; the config file; the
environment; the command line's flags (or a server request, within its limits). The config file
is ``--config PATH`` if given, else ``$FLARE_CONFIG`` if set, else ``flare.toml`` in the current
directory if there is one. It holds settings as top-level keys, spelt as in ``Settings``::

    # flare.toml
    method = "flare"
    theta = 0.4
    max_retrievals = 4
    keep_first_docs = true

Each setting also reads ``FLARE_<NAME>`` from the environment (``FLARE_THETA=0.4``,
``FLARE_KEEP_FIRST_DOCS=true``). An unknown key, a wrongly typed or out-of-range value, or a file
that is missing or not valid TOML raises :class:`~flare.errors.ConfigError` naming the source.

Example::

    from flare.config_file import load_settings
    settings = load_settings()                  # ./flare.toml (if any) + FLARE_* variables
    settings = load_settings("prod.toml", env={})
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flare.config import Settings, setting_info, setting_infos
from flare.errors import ConfigError

CONFIG_FILE = "flare.toml"
CONFIG_ENV = "FLARE_CONFIG"


def config_path(path: str | Path | None = None, *, env: Mapping[str, str] | None = None,
                cwd: Path | None = None) -> Path | None:  # fmt: skip
    """The config file in effect: ``path``, else ``$FLARE_CONFIG``, else ``./flare.toml`` if present."""
    env = os.environ if env is None else env
    if path is not None:
        return Path(path)
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    local = (cwd or Path.cwd()) / CONFIG_FILE
    return local if local.is_file() else None


def file_values(path: Path) -> dict[str, Any]:
    """The settings a config file sets, each checked; errors name the file and the key."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}",
                          f"create it, or unset {CONFIG_ENV} / drop --config") from None  # fmt: skip
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read config file {path}: {err}", "check the path; it must be UTF-8 text") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path} is not valid TOML: {err}", 'write one setting per line, e.g. theta = 0.4') from None
    values: dict[str, Any] = {}
    for key, value in raw.items():
        try:
            values[key] = setting_info(key).check(value)
        except ConfigError as err:
            raise ConfigError(f"{path}: {err.message}", err.hint) from None
    return values


def env_values(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings ``FLARE_<NAME>`` variables set (other ``FLARE_*`` variables are not settings)."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for info in setting_infos():
        text = env.get(info.env)
        if text is None:
            continue
        try:
            values[info.name] = info.parse(text)
        except ConfigError as err:
            raise ConfigError(f"environment {info.env}: {err.message}", err.hint) from None
    return values


def configured_values(path: str | Path | None = None, *, env: Mapping[str, str] | None = None,
                      cwd: Path | None = None) -> dict[str, Any]:  # fmt: skip
    """The settings the config file and then the environment set (the environment wins)."""
    found = config_path(path, env=env, cwd=cwd)
    from_file = file_values(found) if found is not None else {}
    values = {**from_file, **env_values(env)}
    try:
        Settings(**values)  # checks the combination too, before anything runs
    except ConfigError as err:
        source = f"{found} and the environment" if found is not None else "the environment"
        raise ConfigError(f"{source}: {err.message}", err.hint) from None
    return values


def load_settings(path: str | Path | None = None, *, env: Mapping[str, str] | None = None,
                  cwd: Path | None = None) -> Settings:  # fmt: skip
    """:class:`Settings` from the defaults, the config file and the environment, in that order."""
    return Settings(**configured_values(path, env=env, cwd=cwd))
