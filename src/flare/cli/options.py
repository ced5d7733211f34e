"""Options shared by the commands that run the loop, generated from the settings table.

Every :class:`~flare.config.Settings` field becomes an option (``theta`` → ``--theta``, a bool
→ ``--keep-first-docs/--no-keep-first-docs``), with its help text, choices and range from the
field's metadata. An option left out keeps the value of the config file or the environment
(see :mod:`flare.config_file`), else the default.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

import click

from flare.config import SettingInfo, Settings, setting_infos
from flare.config_file import CONFIG_ENV, CONFIG_FILE, configured_values
from flare.engine.methods import check_method
from flare.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])


def check_method_option(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Check ``--method`` against the method table when the command line is parsed (plugins count)."""
    if value is None:
        return None
    try:
        return check_method(value)
    except ConfigError as err:
        raise click.BadParameter(f"{err.message} ({err.hint})", ctx, param) from None


def _param_type(info: SettingInfo) -> click.ParamType[Any, Any]:
    if info.choices:
        return click.Choice(info.choices)
    if info.kind in (int, float) and info.low is None and info.high is None:
        return click.INT if info.kind is int else click.FLOAT
    if info.kind is int:
        return click.IntRange(min=None if info.low is None else int(info.low),
                              max=None if info.high is None else int(info.high))  # fmt: skip
    if info.kind is float:
        return click.FloatRange(min=info.low, max=info.high, min_open=info.low_open)
    return click.STRING


def setting_option(info: SettingInfo) -> Callable[[F], F]:
    """The click option for one setting; its value is ``None`` unless given."""
    help_text = f"{info.help} [default: {info.example}; env {info.env}]"
    if info.kind is bool:
        long = info.flags[-1]
        return click.option(f"{long}/--no-{long[2:]}", info.name, default=None, help=help_text)
    extra: dict[str, Any] = {}
    if info.name == "method":
        extra = {"callback": check_method_option, "metavar": "NAME"}
    elif info.name == "model":
        extra = {"metavar": "SPEC"}
    return click.option(*info.flags, info.name, type=_param_type(info), default=None, help=help_text, **extra)


def setting_options(*, exclude: Collection[str] = ()) -> Callable[[F], F]:
    """Decorate a command with one option per setting (except ``exclude``) and ``--config``."""

    def decorate(func: F) -> F:
        for info in reversed(setting_infos()):
            if info.name not in exclude:
                func = setting_option(info)(func)
        return config_option(func)

    return decorate


def config_option(func: F) -> F:
    return click.option(
        "--config", "config_path", type=click.Path(path_type=Path, dir_okay=False), default=None, metavar="PATH",
        help=f"Settings file (TOML). Default: ${CONFIG_ENV}, else ./{CONFIG_FILE} if present. "
             "Precedence: defaults < file < FLARE_* environment < flags.",
    )(func)  # fmt: skip


def run_options(func: F) -> F:
    """Decorate a command with the model options and every setting."""
    func = setting_options()(func)
    return click.option("--threads", type=click.IntRange(min=1), default=None,
                        help="CPU threads for the model (default: cores - 1; env FLARE_THREADS).")(func)  # fmt: skip


def flag_values(opts: dict[str, Any]) -> dict[str, Any]:
    """The settings given as flags (options left out are ``None`` and not included)."""
    return {i.name: opts[i.name] for i in setting_infos() if opts.get(i.name) is not None}


def settings_from(opts: dict[str, Any]) -> Settings:
    """Defaults, then the config file, then the environment, then the flags in ``opts``."""
    values = configured_values(opts.get("config_path"))
    return Settings(**values).with_overrides(**flag_values(opts))
