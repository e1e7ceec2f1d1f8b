"""Constructor argument checks: a wrong type or range is a ``ConfigError`` at once, naming the argument.

Used by ``Agent``, ``OpenAIChat`` and ``MCPClient`` so that misuse fails at
construction, not later on a worker thread with a raw ``TypeError``.
``bool`` is never accepted where a number is expected (``max_turns=True``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from ..exceptions import ConfigError

__all__ = [
    "check_bool", "check_callable", "check_choice", "check_int", "check_items", "check_number", "check_str",
    "check_timeout", "install_hint",
]


def install_hint(extra: str) -> str:
    """How to install the optional extra ``extra``, the way yiemagent is installed: from its checkout.

    yiemagent is not on a package index, so an extra cannot be installed by the package's name
    (that would fail, or install something else): every message naming a missing extra says
    ``pip install -e ".[x]"``, run in the checkout (README "Install").

    >>> install_hint("postgres")
    'pip install -e ".[postgres]" (in your yiemagent checkout)'
    """
    return f'pip install -e ".[{extra}]" (in your yiemagent checkout)'


def check_int(name: str, value: Any, *, minimum: int, optional: bool = False) -> None:
    """``value`` is an ``int`` (not a bool) >= ``minimum`` (or None when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        none = " or None" if optional else ""
        raise ConfigError(f"{name} must be an int{none}, not {type(value).__name__} {value!r:.50}")
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, not {value}")


def check_number(name: str, value: Any, *, positive: bool = True, optional: bool = False) -> None:
    """``value`` is a finite int or float (not a bool), > 0 when ``positive``, else >= 0 (or None when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        none = " or None" if optional else ""
        raise ConfigError(f"{name} must be a finite number of seconds{none}, not {type(value).__name__} {value!r:.50}")
    if positive and value <= 0:
        raise ConfigError(f"{name} must be greater than 0, not {value}")
    if value < 0:
        raise ConfigError(f"{name} must be 0 or more, not {value}")


def check_timeout(value: Any, name: str = "timeout_seconds") -> None:
    """A per-call timeout: None (the default applies) or a finite number of seconds > 0, as constructors require."""
    check_number(name, value, optional=True)


def check_str(name: str, value: Any, *, optional: bool = False, empty: bool = True) -> None:
    """``value`` is a ``str`` (non-empty unless ``empty``) or None when ``optional``."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        none = " or None" if optional else ""
        raise ConfigError(f"{name} must be a str{none}, not {type(value).__name__} {value!r:.50}")
    if not empty and not value.strip():
        raise ConfigError(f"{name} must not be empty")


def check_callable(name: str, value: Any, *, optional: bool = True) -> None:
    """``value`` is callable (or None when ``optional``)."""
    if value is None and optional:
        return
    if not callable(value):
        raise ConfigError(f"{name} must be callable, not {type(value).__name__} {value!r:.50}")


def check_choice(name: str, value: Any, choices: tuple[Any, ...]) -> None:
    """``value`` is one of ``choices``."""
    if not any(value is c or (type(value) is type(c) and value == c) for c in choices):
        raise ConfigError(f"{name} must be one of {', '.join(map(repr, choices))}, not {value!r:.50}")


def check_items(name: str, value: Any, *, what: str = "items") -> list[Any]:
    """``value`` as a list: any iterable but one thing that only looks like a sequence of ``what``.

    A ``str``, ``bytes`` or ``os.PathLike`` (one path: iterating it gives its
    characters) and a ``Mapping`` (its keys) are refused with a
    ``ConfigError`` that names the fix (``[value]``).
    """
    if isinstance(value, (str, bytes, os.PathLike, Mapping)):
        raise ConfigError(f"{name} must be a list of {what}, e.g. [{value!r:.60}], not a single "
                          f"{type(value).__name__} (it would be read one character or key at a time)")
    try:
        return list(value)
    except TypeError:
        raise ConfigError(f"{name} must be a list of {what}, not {type(value).__name__} {value!r:.50}") from None


def check_bool(name: str, value: Any) -> None:
    """``value`` is ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be True or False, not {type(value).__name__} {value!r:.50}")
