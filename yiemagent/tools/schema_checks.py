"""Validating arguments against schemas from peers in bounded time, with only documented exceptions.

A tool's ``inputSchema`` comes from an MCP server: its ``pattern`` and
``patternProperties`` regexes run on text the model wrote. Python's ``re``
backtracks (``^(a|a)*$`` on 30 ``a`` and a ``b`` takes minutes, holding the
GIL: the whole process stalls and ``abort()`` is powerless). Here they run in
the ``regex`` library (PyPI ``regex``, the optional extra ``safe-regex``: ``pip install -e ".[safe-regex]"``;
it has a ``timeout``), within one time budget per validation
(``PATTERN_BUDGET_SECONDS``). A pattern that cannot be decided in time, or
cannot be compiled, is not enforced (the server still checks its own input):
validation only loosens, it never hangs. Without ``regex`` installed, server
patterns are not enforced at all (logged once at WARNING).

Dependencies may raise what they do not document: a ``RecursionError`` on a
``$ref`` cycle, ``referencing`` errors, and a Rust ``PanicException`` (a
``BaseException``, not an ``Exception``) from ``rpds``; ``foreign_failure``
tells them from ``KeyboardInterrupt``/``SystemExit``, so callers convert
them to their documented exception.

Spec: JSON Schema 2020-12 (``pattern``, ``patternProperties``: ECMA-262
regexes, matched unanchored); ``jsonschema`` lets a validator class replace
a keyword (``jsonschema.validators.extend``).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jsonschema
import jsonschema.validators
from jsonschema.exceptions import ValidationError

from .._internal.checks import install_hint

__all__ = ["PATTERN_BUDGET_SECONDS", "foreign_failure", "json_pointer", "pattern_budget", "pattern_matches",
           "safe_validator_class"]

logger = logging.getLogger("yiemagent.tools.schema_checks")

PATTERN_BUDGET_SECONDS = 0.25
"""Time all ``pattern``/``patternProperties`` checks of one validation may take together."""

_state = threading.local()
_warned: set[str] = set()

_regex: Any = False
"""The ``regex`` module, loaded by the first pattern check (None: not installed); False: not looked up yet."""


def _regex_module() -> Any:
    global _regex
    if _regex is False:
        try:
            import regex  # type: ignore[import-untyped]
        except ImportError:  # pragma: no cover - the extra is installed in CI
            regex = None
        _regex = regex
    return _regex


def foreign_failure(exc: BaseException) -> bool:
    """True for what a dependency raised that is not ours to pass on (anything but Ctrl-C, exit, generator close).

    Covers every ``Exception`` and ``BaseException`` subclasses such as pyo3's ``PanicException``.
    """
    return not isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit))


@contextmanager
def pattern_budget(seconds: float = PATTERN_BUDGET_SECONDS) -> Iterator[None]:
    """Give the pattern checks run inside (on this thread) ``seconds`` together."""
    previous = getattr(_state, "deadline", None)
    _state.deadline = time.monotonic() + seconds
    try:
        yield
    finally:
        _state.deadline = previous


def _warn_once(key: str, message: str, *args: Any) -> None:
    if key not in _warned and len(_warned) < 1000:
        _warned.add(key)
        logger.warning(message, *args)


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    module = _regex_module()
    assert module is not None
    return module.compile(pattern)


def pattern_matches(pattern: str, text: str, *, undecided: bool = True) -> bool:
    """Whether ``text`` contains a match of ``pattern``, decided within the current budget.

    Returns ``undecided`` when the pattern does not compile, the budget is
    spent, or ``regex`` is not installed: callers pass the answer that checks
    less (True for ``pattern``; False to apply a ``patternProperties``
    subschema, True to call a key "not additional"). Never raises.
    """
    if _regex_module() is None:
        _warn_once("no-regex", f"inputSchema patterns are not enforced: {install_hint('safe-regex')}")
        return undecided
    deadline = getattr(_state, "deadline", None)
    remaining = PATTERN_BUDGET_SECONDS if deadline is None else deadline - time.monotonic()
    if remaining <= 0:
        _warn_once(f"budget:{pattern[:200]}", "pattern %.200r not enforced: the time budget is spent", pattern)
        return undecided
    try:
        return _compiled(pattern).search(text, timeout=remaining, concurrent=True) is not None
    except TimeoutError:
        _warn_once(f"slow:{pattern[:200]}", "pattern %.200r not enforced: no answer within %.2fs (a regex "
                   "that backtracks)", pattern, PATTERN_BUDGET_SECONDS)
        return undecided
    except BaseException as exc:  # regex.error, RecursionError, MemoryError, ...
        if not foreign_failure(exc):
            raise
        _warn_once(f"bad:{pattern[:200]}", "pattern %.200r not enforced: %s", pattern, exc)
        return undecided


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and isinstance(pattern, str) and not pattern_matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object") or not isinstance(patterns, dict):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if pattern_matches(pattern, key, undecided=False):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(original: Any) -> Any:
    """``additionalProperties`` whose ``patternProperties`` regexes are bounded; the draft's own otherwise."""

    def check(validator: Any, additional: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        patterns = schema.get("patternProperties") if isinstance(schema, dict) else None
        if not isinstance(patterns, dict) or not patterns:
            yield from original(validator, additional, instance, schema)
            return
        if not validator.is_type(instance, "object"):
            return
        properties = schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}
        extras = [key for key in instance if key not in properties
                  and not any(pattern_matches(p, key) for p in patterns)]
        if validator.is_type(additional, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], additional, path=extra)
        elif additional is False and extras:
            listed = ", ".join(repr(each) for each in sorted(extras, key=str))
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{listed} {verb} not match any of the regexes: "
                                  f"{', '.join(repr(p) for p in sorted(patterns))}")

    return check


@functools.lru_cache(maxsize=16)
def _extended(base: type[Any]) -> type[Any]:
    extended: type[Any] = jsonschema.validators.extend(base, {  # type: ignore[no-untyped-call]
        "pattern": _pattern, "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties(base.VALIDATORS["additionalProperties"]),
    })
    return extended


def safe_validator_class(schema: Any) -> type[Any]:
    """The ``jsonschema`` validator class for ``schema`` (draft from ``$schema``), its regexes bounded in time.

    ``check_schema`` and construction work as on the draft's own class; the
    ``pattern``, ``patternProperties`` and ``additionalProperties`` keywords run
    their regexes through ``pattern_matches``.
    """
    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return _extended(base)


def json_pointer(root: Any, ref: str) -> Any:
    """The node a local ``$ref`` (``"#/$defs/Query"``) points at in ``root``.

    Source: RFC 6901 (JSON Pointer) in a URI fragment (percent-decoded, ``~1`` and ``~0``).

    Raises:
        LookupError: ``ref`` is not local (``#...``) or points at nothing.
    """
    if not ref.startswith("#"):
        raise LookupError(f"not a local reference: {ref}")
    node = root
    fragment = urllib.parse.unquote(ref[1:])
    if fragment in ("", "/"):
        return root
    for token in fragment.lstrip("/").split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise LookupError(f"{ref} points at nothing")
    return node
