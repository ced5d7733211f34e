"""Every error flare raises on purpose, each carrying a hint that tells the user what to do.

::

    FlareError
    ├── ConfigError          a setting or option value is invalid
    ├── InputError           a question, document or corpus line is unusable
    ├── FilterError          a filter expression is malformed or names an unknown field
    │   └── UnknownFieldError    the field is not in the index (its hint lists the fields)
    ├── ModelError           a model file is missing/unloadable or lacks a needed capability
    ├── CorpusIndexError     an index is missing, corrupt or of an unknown format version
    └── RetrieverError       a search failed

An error wrapping one from a library chains it (``raise ... from err``) when its traceback helps
whoever debugs the failure (a server log, a crashed native extension); the message itself stays
one line, with :func:`one_line` of the cause.
"""

from __future__ import annotations


class FlareError(Exception):
    """Base of every deliberate flare error. ``hint`` says how to fix the problem."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message


class ConfigError(FlareError):
    """A setting, CLI option or spec string has an invalid value."""


class InputError(FlareError):
    """User input (question, file, corpus line) cannot be used."""


class FilterError(FlareError):
    """A metadata filter is malformed, names an unknown field or has a value of the wrong type."""


class UnknownFieldError(FilterError):
    """A filter names a metadata field the index does not have.

    The message names the field; the hint lists the index's fields, so a server can show
    callers the message alone.
    """


class ModelError(FlareError):
    """A language model cannot be loaded or lacks a capability the method needs."""


class CorpusIndexError(FlareError):
    """An index directory is missing, incomplete or of an unsupported format version."""


class RetrieverError(FlareError):
    """A retriever failed to answer a search."""


def one_line(err: BaseException, limit: int = 300) -> str:
    """``err``'s text on one line (whitespace collapsed, at most ``limit`` characters), or its class name.

    >>> one_line(ValueError("bad\n  value")), one_line(KeyError())
    ('bad value', 'KeyError')
    """
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
