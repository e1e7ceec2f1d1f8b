"""Constructor argument checks: a wrong type or range is a ``ConfigError`` at once, naming the argument.

Used by ``Agent``, ``OpenAIChat`` and ``MCPClient`` so that misuse fails at
construction, not later on a worker thread with a raw ``TypeError``.
``bool`` is never accepted where a number is expected (``max_turns=True``).
"""

from __future__ import annotations

import difflib
import functools
import math
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from ..exceptions import ConfigError

_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = [
    "all_of",
    "check_arguments",
    "check_bool",
    "check_callable",
    "check_choice",
    "check_int",
    "check_items",
    "check_number",
    "check_request_fields",
    "check_str",
    "check_timeout",
    "checked_when_called",
    "install_hint",
    "nearest",
    "one_of",
    "unknown_name",
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


def nearest(value: Any, allowed: Iterable[Any]) -> str:
    """`` (did you mean 'x'?)`` for the allowed name nearest to ``value`` (``difflib``), or ``""``."""
    if not isinstance(value, str):
        return ""
    names = [a for a in allowed if isinstance(a, str)]
    close = difflib.get_close_matches(value, names, n=1, cutoff=0.5)
    if not close:  # a case or separator slip ("Tool-Input", "tool-input") is still near
        folded = {a.lower().replace("-", "_").replace(" ", "_"): a for a in names}
        found = folded.get(value.lower().replace("-", "_").replace(" ", "_"))
        close = [found] if found else []
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_name(name: str, value: Any, allowed: Iterable[Any], *, error: type[Exception] = ConfigError) -> Exception:
    """The error for ``value`` outside ``allowed``: the documented set and the nearest name."""
    choices = tuple(allowed)
    return error(f"{name} must be one of {', '.join(map(repr, choices))}, not {value!r:.50}"
                 f"{nearest(value, choices)}")


def one_of(name: str, value: Any, allowed: Iterable[Any], *, error: type[Exception] = ConfigError) -> Any:
    """``value`` when it is one of ``allowed`` (same type and equal), else ``error`` naming the nearest.

    The one check for every option of the public API given as a string or a
    name (issue 33, *fail closed*): an option outside its documented set is an
    error when it is given, never a silent default. ``True`` is not ``1``.
    """
    choices = tuple(allowed)
    if not any(value is c or (type(value) is type(c) and value == c) for c in choices):
        raise unknown_name(name, value, choices, error=error)
    return value


def all_of(name: str, values: Any, allowed: Iterable[Any], *, error: type[Exception] = ConfigError,
           empty: bool = True) -> tuple[Any, ...]:
    """``values`` (a list or tuple of names, not one string) as a tuple when each is one of ``allowed``.

    Raises ``error`` naming the first unknown name and its nearest valid one; a
    single ``str`` (``stages="input"``) is refused too (it would be read one
    character at a time). ``empty=False``: an empty list is refused.
    """
    choices = tuple(allowed)
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple, set, frozenset)):
        raise error(f"{name} must be a list of names among {', '.join(map(repr, choices))}, e.g. "
                    f"[{values!r:.40}], not {type(values).__name__}")
    items = tuple(values)
    for item in items:
        one_of(f"each of {name}", item, choices, error=error)
    if not empty and not items:
        raise error(f"{name} must name at least one of {', '.join(map(repr, choices))}")
    return items


def check_choice(name: str, value: Any, choices: tuple[Any, ...]) -> None:
    """``value`` is one of ``choices`` (``one_of``)."""
    one_of(name, value, choices)


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


TOOL_CHOICES = ("auto", "none", "required")
"""``tool_choice`` given as a name (OpenAI Chat Completions ``tool_choice``); a dict names one tool."""
_REQUEST_COUNTS = ("max_tokens", "max_completion_tokens", "n", "top_k", "top_logprobs", "seed")
_REQUEST_NUMBERS = ("temperature", "top_p", "min_p", "frequency_penalty", "presence_penalty", "repeat_penalty")


def check_request_fields(fields: Mapping[str, Any], *, where: str = "") -> None:
    """The request fields a caller gives a model (``OpenAIChat(**extra_body)``): known ones checked at once.

    ``tool_choice`` as a string is one of ``TOOL_CHOICES``; ``max_tokens`` and
    the other counts are ints (``max_tokens``, ``n`` >= 1; ``seed`` any int,
    the others >= 0); ``temperature`` and the other numbers are finite (not
    NaN, not infinite; ``temperature``, ``top_p``, ``min_p`` >= 0). Unknown
    fields go to the server as they are (a server's own, e.g. llama.cpp's).
    """
    prefix = f"{where} " if where else ""
    choice = fields.get("tool_choice")
    if isinstance(choice, str):
        one_of(f"{prefix}tool_choice", choice, TOOL_CHOICES)
    for key in _REQUEST_COUNTS:
        if fields.get(key) is not None:
            minimum = 1 if key in ("max_tokens", "max_completion_tokens", "n") else 0
            check_int(f"{prefix}{key}", fields[key], minimum=-(2**63) if key == "seed" else minimum)
    for key in _REQUEST_NUMBERS:
        value = fields.get(key)
        if value is None:
            continue
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise ConfigError(f"{prefix}{key} must be a finite number, not {type(value).__name__} {value!r:.50}")
        if key in ("temperature", "top_p", "min_p") and value < 0:
            raise ConfigError(f"{prefix}{key} must be 0 or more, not {value}")


def check_arguments(args: Mapping[str, Any], *, seconds: Iterable[str] = (), counts: Iterable[str] = ()) -> None:
    """``args`` (a constructor's ``locals()``): each of ``seconds`` a finite number > 0, each of ``counts`` an int >= 1.

    ``ConfigError`` naming the first argument that is not (a negative, NaN or infinite bound given by a
    caller is a mistake, never a default: issue 33).
    """
    for name in seconds:
        check_number(name, args[name])
    for name in counts:
        check_int(name, args[name], minimum=1)


def checked_when_called(check: Callable[..., None]) -> Callable[[_F], _F]:
    """Decorate a generator function: ``check(*args, **kwargs)`` runs when it is called, not at its first line.

    A generator's body (its argument checks included) runs only when it is first iterated: a typo in
    an option would fail late, on a server thread, after the response began. ``check`` raises
    ``ConfigError`` at the call instead.
    """
    def decorate(function: _F) -> _F:
        @functools.wraps(function)
        def checked(*args: Any, **kwargs: Any) -> Any:
            check(*args, **kwargs)
            return function(*args, **kwargs)
        return checked  # type: ignore[return-value]
    return decorate
