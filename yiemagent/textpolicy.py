"""The outbound text policy: what yiemagent writes where it does not control the reading.

Every place where yiemagent hands text or JSON to a reader it does not control
(a model request, an MCP request, a store row, a saved state, an SSE stream, a
log line, a terminal, a status or repr shown to a user) applies one of the
functions below, and registers it in ``BOUNDARIES`` (``@boundary``): the table
of boundaries. ``tests/property/test_boundaries.py`` runs one hostile corpus
through every registered boundary (``scripts/fuzz_boundaries.py`` runs
100,000+ examples); a new boundary is not done until it is in the table.

The kinds of hostile text and the rule at each kind of boundary:

================  ==============  ==============  ==============  ============  ===========
what              ``json``        ``mcp``         ``log``         ``terminal``  ``display``
================  ==============  ==============  ==============  ============  ===========
lone surrogate    U+FFFD          refused         U+FFFD          U+FFFD        U+FFFD
NaN, Infinity     ``null``        refused         (text)          (text)        (text)
C0 controls, ESC  ``\\u`` escaped  ``\\u`` escaped  ``\\x1b`` shown  removed (1)   kept
C1, DEL           ``\\u`` escaped  ``\\u`` escaped  ``\\x9b`` shown  removed       kept
escape sequences  ``\\u`` escaped  ``\\u`` escaped  shown escaped   removed (2)   kept
known secrets     ``***``         kept (3)        ``***``         ``***``       ``***``
================  ==============  ==============  ==============  ============  ===========

(1) ``\\n`` and ``\\t`` are kept; ``\\r`` (which overwrites a line) is removed.
(2) ECMA-48 CSI (cursor moves, screen clears, colours), OSC (window title,
    OSC 52 clipboard writes, hyperlinks), DCS/SOS/PM/APC strings, two-character
    ESC sequences and their 8-bit C1 forms; bidirectional overrides (U+202A-U+202E,
    U+2066-U+2069, "Trojan Source") are removed too.
(3) MCP requests carry the arguments of an action: changing them silently would
    act on something else (a file name with a lone surrogate would name another
    file), so values no strict JSON peer accepts are refused (``ValueError``) and
    secrets are not rewritten (the server was configured with them).

``json`` boundaries: model requests, store rows, saved states (``/save``,
``state_to_json``), SSE. The JSON text written is RFC 8259 and UTF-8
encodable; C1 controls and DEL are written as ``\\u`` escapes too, so that a
saved file printed with ``cat`` cannot drive the terminal (``json.dumps``
already escapes C0). ``display``: ``mcp_status()``, ``mcp_unavailable``,
reprs, the text of every yiemagent exception (``yiemagent.exceptions``:
``str``, ``args`` and text attributes): what a program shows; it goes on
through another boundary.

Known secrets: values registered with ``register_secrets`` (4+ characters):
``${VAR}`` expansions whose name or value looks like a credential
(``yiemagent.mcp.config``), static MCP headers and URL secrets, model API
keys. ``scrub_secrets`` replaces each with ``***``.

JSON safety (formerly ``yiemagent.jsonsafe``): values every strict JSON parser accepts, and strict (de)serialisation.

``json.dumps`` writes ``NaN``/``Infinity`` (not JSON), raises on ``bytes``,
sets and non-string keys of odd types, and ``str.encode`` raises on lone
surrogates, so one such value in a history would make every later request
fail before it is sent. ``json_safe(value)`` returns a copy holding only
what RFC 8259 JSON can carry; ``dumps_strict`` and ``loads_strict`` refuse the
rest.

Rules of ``json_safe`` (each loosens, never drops a container):

* ``NaN``, ``Infinity``, ``-Infinity`` -> ``None``;
* dict keys -> ``str(key)`` (``True`` -> ``"True"``, ``1`` -> ``"1"``);
* ``bytes``/``bytearray`` -> text (UTF-8, undecodable bytes as U+FFFD);
* tuples, sets, frozensets -> lists (sets sorted by ``repr`` so output is stable);
* lone surrogates in strings -> U+FFFD;
* anything else (objects, Decimals, dates) -> ``str(value)``;
* nesting deeper than ``max_depth`` (default 64) -> ``None``; cycles -> ``None``.

Spec: RFC 8259 (JSON); ECMA-48 (control functions); Unicode TR #36 (bidi).
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

__all__ = [
    "BOUNDARIES", "Boundary", "BoundaryKind", "boundary", "decode_strict", "display_text", "dumps_strict",
    "install_log_policy", "is_clean_text", "json_safe", "json_text", "known_secrets", "loads_strict", "log_text",
    "looks_secret", "register_secrets", "scrub_secrets", "strict_json_text", "terminal_text",
]

MAX_DEPTH = 64


def is_clean_text(text: str) -> bool:
    """True when ``text`` encodes as UTF-8 (no lone surrogates)."""
    if text.isascii():  # O(1) in CPython: the string knows it
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _fix_text(text: str) -> str:
    if is_clean_text(text):
        return text
    return "".join(ch if not 0xD800 <= ord(ch) <= 0xDFFF else "\ufffd" for ch in text)


def json_safe(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """Return ``value`` with everything JSON cannot carry replaced (see the module docstring)."""
    return _safe(value, max_depth, set())


def _safe(value: Any, depth: int, active: set[int]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return _fix_text(str(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _fix_text(bytes(value).decode("utf-8", "replace"))
    if depth <= 0 or id(value) in active:
        return None
    if isinstance(value, dict):
        active.add(id(value))
        try:
            return {_fix_text(k) if isinstance(k, str) else str(_safe(k, 1, active)): _safe(v, depth - 1, active)
                    for k, v in list(value.items())}
        finally:
            active.discard(id(value))
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
        active.add(id(value))
        try:
            return [_safe(v, depth - 1, active) for v in items]
        finally:
            active.discard(id(value))
    try:
        return _fix_text(str(value))
    except Exception:  # a __str__ that raises: the type name still says what it was
        return f"<{type(value).__name__}>"


def dumps_strict(value: Any) -> str:
    """``json.dumps`` that writes only RFC 8259 JSON (characters kept, no ``\\u`` escapes).

    Values JSON cannot carry are replaced first (``json_safe``), so this never
    raises for a value of any type.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        text = json.dumps(json_safe(value), ensure_ascii=False, allow_nan=False)
    return text if is_clean_text(text) else _fix_text(text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_STRICT = json.JSONDecoder(parse_constant=_no_constant)


def decode_strict(text: str, start: int = 0) -> tuple[Any, int]:
    """``json.JSONDecoder.raw_decode`` refusing ``NaN``/``Infinity``: the value at ``start`` and where it ends.

    Raises:
        ValueError: no RFC 8259 JSON value starts there.
        RecursionError: nesting too deep for the parser.
    """
    return _STRICT.raw_decode(text, start)


def loads_strict(text: str) -> Any:
    """``json.loads`` that refuses ``NaN``/``Infinity`` and too deep nesting.

    Raises:
        ValueError: not RFC 8259 JSON (``json.JSONDecodeError`` is a ValueError);
            nesting too deep for the parser is reported the same way.
    """
    try:
        return _STRICT.decode(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


BoundaryKind = Literal["json", "mcp", "log", "terminal", "display"]

MIN_SECRET_CHARS = 4
"""Shorter values are never treated as secrets (``***`` for every ``1`` would destroy all text)."""

# ------------------------------------------------------------------------------------------ secrets

_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()
_TRANSIENT: dict[str, None] = {}  # register_secrets(transient=True), least recently registered first
MAX_TRANSIENT_SECRETS = 1000
_SECRET_PATTERN: re.Pattern[str] | None = None
_SECRET_NAME = re.compile(r"(?i)token|secret|key|passw|pwd|pass\b|auth|credential|cookie|session|bearer|api")
_TOKEN_LIKE = re.compile(r"[A-Za-z0-9_\-.~+=:]{16,}\Z")


def looks_secret(name: str, value: str) -> bool:
    """True when variable ``name`` holding ``value`` looks like a credential.

    ``value`` must be 8+ characters without whitespace that is not a URL or a
    path (``://``, a leading ``/``, ``~`` or ``.``: ``${API_BASE}`` is not
    hidden); then either ``name`` holds token, secret, key, passw(ord), pwd,
    auth, credential, cookie, session, bearer or api (any case), or ``value``
    is 16+ characters mixing letters and digits (``ghp_...``, ``sk-...``).

    Example:
        >>> looks_secret("GITHUB_TOKEN", "ghp_abc12345"), looks_secret("API_BASE", "http://localhost:8080")
        (True, False)
    """
    if len(value) < 8 or any(c.isspace() for c in value) or "://" in value or value.startswith(("/", "~", ".")):
        return False
    if _SECRET_NAME.search(name):
        return True
    return bool(_TOKEN_LIKE.match(value)) and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def register_secrets(values: Iterable[str], *, transient: bool = False) -> None:
    """Treat each of ``values`` (4+ characters) as a secret at every boundary, for the life of the process.

    ``transient``: values that come with requests (a bearer token a server verified): of those only the
    ``MAX_TRANSIENT_SECRETS`` most recently registered are kept, so that a stream of new ones cannot grow the
    registry (and the cost of every scrub) without bound; they are found by substring search, so a new one
    costs no recompiled pattern.
    """
    global _SECRET_PATTERN
    added = {str(v) for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_CHARS}
    with _SECRETS_LOCK:
        fresh = added - _SECRETS if not transient else {v for v in added - _SECRETS if v not in _TRANSIENT}
        for value in added - _SECRETS if transient else ():
            _TRANSIENT[value] = _TRANSIENT.pop(value, None)  # the most recently registered last
        while len(_TRANSIENT) > MAX_TRANSIENT_SECRETS:
            del _TRANSIENT[next(iter(_TRANSIENT))]
        if not fresh:
            return
        if not transient:
            _SECRETS.update(added)
            ordered = sorted(_SECRETS, key=len, reverse=True)
            _SECRET_PATTERN = re.compile("|".join(re.escape(s) for s in ordered))
    install_log_policy()


def known_secrets() -> frozenset[str]:
    """The registered secrets (for tests and for code that must hide them elsewhere)."""
    with _SECRETS_LOCK:
        return frozenset(_SECRETS | _TRANSIENT.keys())


def scrub_secrets(text: str) -> str:
    """``text`` with every registered secret replaced by ``***`` (one pass, longest secret first)."""
    pattern = _SECRET_PATTERN
    if not text or (pattern is None and not _TRANSIENT):
        return text
    text = pattern.sub("***", text) if pattern is not None else text
    for secret in tuple(_TRANSIENT):  # the request tokens (a copy: others register meanwhile)
        if secret in text:
            text = text.replace(secret, "***")
    return text


# ------------------------------------------------------------------------------------------ rules

_SURROGATE = re.compile("[\ud800-\udfff]")
_C1_AND_DEL = re.compile("[\x7f-\x9f]")
# ECMA-48: CSI, OSC (ends at BEL or ST, or runs to the end), DCS/SOS/PM/APC strings, 2-char ESC sequences;
# then the 8-bit forms. Each alternative is linear (no nested quantifiers).
_ESCAPE_SEQUENCE = re.compile(
    "\x1b\\[[0-?]*[ -/]*[@-~]?"
    "|\x1b\\][^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"
    "|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\\\|\x9c)?"
    "|\x1b[ -/]*[0-~]?"
    "|\x9b[0-?]*[ -/]*[@-~]?"
    "|\x9d[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"
    "|[\x90\x98\x9e\x9f][^\x1b\x9c]*(?:\x1b\\\\|\x9c)?"
)
_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LOG_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _surrogates(text: str) -> str:
    return text if is_clean_text(text) else _SURROGATE.sub("\ufffd", text)


def display_text(text: Any) -> str:
    """``display`` rule: ``str(text)`` with lone surrogates -> U+FFFD and known secrets -> ``***``."""
    return scrub_secrets(_surrogates(text if isinstance(text, str) else str(text)))


def terminal_text(text: Any) -> str:
    """``terminal`` rule: text safe to write to a terminal (see the module docstring).

    Escape sequences are removed whole; other control characters except
    ``\\n`` and ``\\t`` are removed (a lone ESC split from its sequence across
    two writes is removed too, so the rest prints as plain text).
    """
    text = display_text(text)
    text = _ESCAPE_SEQUENCE.sub("", text)
    return _TERMINAL_UNSAFE.sub("", text)


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def log_text(text: Any) -> str:
    """``log`` rule: one line of text (control characters shown as ``\\xNN``), secrets ``***``."""
    return _LOG_UNSAFE.sub(_escape_char, display_text(text))


def _escape_c1(text: str) -> str:
    return _C1_AND_DEL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _scrub_value(value: Any) -> Any:
    if _SECRET_PATTERN is None and not _TRANSIENT:
        return value
    if isinstance(value, str):
        return scrub_secrets(value)
    if isinstance(value, dict):
        return {scrub_secrets(k) if isinstance(k, str) else k: _scrub_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_value(v) for v in value]
    return value


def json_text(value: Any) -> str:
    """``json`` rule: RFC 8259 JSON text of ``value``, UTF-8 encodable, no raw control character, no secret.

    Values JSON cannot carry are replaced as ``yiemagent.textpolicy.json_safe``
    says (NaN -> null, lone surrogate -> U+FFFD, bytes -> text, ...). Never
    raises, for a value of any type.
    """
    try:
        text = json.dumps(_scrub_value(value), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        text = json.dumps(_scrub_value(json_safe(value)), ensure_ascii=False, allow_nan=False)
    if not is_clean_text(text):
        text = json.dumps(_scrub_value(json_safe(value)), ensure_ascii=False, allow_nan=False)
    return _escape_c1(text)


def strict_json_text(value: Any, *, separators: tuple[str, str] | None = None) -> str:
    """``mcp`` rule: compact-able JSON text of ``value``, or ``ValueError`` for what strict peers refuse.

    Raises:
        UnicodeEncodeError: a string holds a lone surrogate (a ``ValueError``;
            ``.object[.start:.end]`` is the bad text).
        ValueError: NaN or Infinity, or nesting too deep.
        TypeError: a value that is not JSON (a set, bytes, an object).
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=separators)
    except RecursionError:
        raise ValueError("nested too deeply to be JSON") from None
    text.encode("utf-8")  # raises UnicodeEncodeError for a lone surrogate
    return _escape_c1(text)


# ------------------------------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Boundary:
    """One row of the table of boundaries."""

    name: str
    kind: BoundaryKind
    """Which rule of the module docstring applies (what the property suite checks)."""
    apply: Callable[[Any], Any]
    """The function the boundary's own code calls to write a value (text, JSON value, log record)."""
    where: str
    """The code that calls it (module.function)."""


BOUNDARIES: dict[str, Boundary] = {}
"""The table of boundaries: name -> ``Boundary``. Filled by ``@boundary`` when each module is imported;
``EXPECTED_BOUNDARIES`` names the rows the package must have."""

EXPECTED_BOUNDARIES = frozenset({
    "model_request", "mcp_request_stdio", "mcp_request_http", "store_row", "saved_state", "sse", "ui_stream", "log",
    "terminal", "mcp_status", "mcp_unavailable", "repr_http_transport", "repr", "exception", "span",
    "mcp_server_reply",
})

F = TypeVar("F", bound=Callable[..., Any])


def boundary(name: str, kind: BoundaryKind) -> Callable[[F], F]:
    """Register the decorated function as the writer of boundary ``name`` (see ``BOUNDARIES``)."""

    def register(fn: F) -> F:
        BOUNDARIES[name] = Boundary(name, kind, fn, f"{fn.__module__}.{fn.__qualname__}")
        return fn

    return register


BOUNDARIES["repr"] = Boundary("repr", "display", display_text,
                              "yiemagent.textpolicy.display_text (MCPClient, MCPServerConfig reprs)")


# ------------------------------------------------------------------------------------------ logs


@boundary("log", "log")
def policed_log_record(record: logging.LogRecord) -> logging.LogRecord:
    """Rewrite ``record`` in place: secrets ``***``, control characters in its arguments shown escaped.

    The format string is yiemagent's own (its line breaks are kept); arguments
    and a message without arguments are text from elsewhere and follow the ``log`` rule;
    so does an exception's traceback (``exc_info``: formatted here into ``exc_text``).
    """
    if getattr(record, "_yiemagent_policed", False):
        return record
    try:
        if record.args:
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            shown = tuple(a if isinstance(a, (int, float)) else _Policed(a) for a in args)
            record.msg = display_text(str(record.msg)) % (shown if isinstance(record.args, tuple) else shown[0])
        else:
            record.msg = log_text(record.msg)
        record.args = ()
    except Exception:  # a broken record is the logging module's business: keep it, escaped and scrubbed
        try:
            record.msg = log_text(record.getMessage())
        except Exception:
            record.msg = log_text(record.msg)
        record.args = ()
    if record.exc_info and not record.exc_text:  # the traceback quotes the exception's own words: same rule
        record.exc_text = _traceback_text(record.exc_info)
    record._yiemagent_policed = True
    return record


def _traceback_text(exc_info: Any) -> str:
    """A traceback by the ``log`` rule: each line scrubbed and escaped, an exception's own text on one line."""
    import traceback

    out: list[str] = []
    try:
        for chunk in traceback.TracebackException(*exc_info[:3]).format():
            if chunk.startswith(("Traceback", "  ", "\n")):  # frames, the chain's separators: the interpreter's
                out += [log_text(line) for line in chunk.rstrip("\n").split("\n")]
            else:  # "Type: message", which a peer may have written: its line breaks shown escaped (no fake line)
                out.append(log_text(chunk.rstrip("\n")))
    except Exception:
        return "(the exception could not be formatted)"
    return "\n".join(out)


class _Policed:
    """A log argument whose ``%s`` and ``%r`` follow the ``log`` rule."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return log_text(str(self.value))

    def __repr__(self) -> str:
        return log_text(repr(self.value))


_POLICED_PREFIXES = ("yiemagent", "urllib3.")
_factory_lock = threading.Lock()
_installed = False


def install_log_policy() -> None:
    """Apply the ``log`` rule to every record of a ``yiemagent`` (or urllib3) logger; idempotent.

    A logger's filters do not see records of its child loggers, and loggers
    are made at any time, so the rule is applied where every record is made:
    a log record factory that wraps the one installed before it
    (``logging.setLogRecordFactory``, the documented way). ``yiemagent`` calls
    this at import.
    """
    global _installed
    with _factory_lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            if record.name.startswith(_POLICED_PREFIXES):
                policed_log_record(record)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True
