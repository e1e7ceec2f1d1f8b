"""The grounding guardrail: an answer may state only numbers and names that a tool or the user gave.

For small local models, which answer fluently from nothing: the demo's 270M model said Kyiv's
"-3 °C" was "27.8 °F" and answered a question about Madrid with invented demographics and no tool
call. ``grounding_guardrail()`` is an output guardrail (``Agent(output_guardrails=[...])``,
``yiemagent.tools.guardrails``): it compares the answer's claims with the sources, the text of the
conversation's user messages and tool results (plus ``known`` texts of the app's own):

* a **number** (``-3``, ``27.8``, ``3,300,000``, a Unicode minus too) with its **unit** when one
  follows (``°C``, ``°F``, ``%``, ``km``, ``million``...: ``UNITS``) is supported when a source has the
  same value, and, if both name a unit, the same unit. List markers (``1.``, ``2)`` starting a line) are
  not checked; small numbers are ("The answer is 10." to "How many people live in Madrid?" was the demo
  model's); nor are digits inside words (``COVID-19``, ``H2O``);
* a **name** (a capitalised word that does not start a sentence, e.g. ``Spain``, ``Catholic``) is
  supported when a source has it (any case); ``COMMON_WORDS`` (``I``, unit and weekday names) are not
  checked.

An answer with an unsupported claim is sent back (verdict ``retry``; the message starts with
``FEEDBACK_PREFIX`` and is not a source itself) with the claims listed and
the instruction to use the tools or say it does not know, at most ``retries`` times; then the run
ends with status ``guardrail_tripped`` and ``answer`` (by default "I do not know: ...") as its answer,
so no answer of the run states a fact nobody gave. ``info`` is ``{"unsupported": [claim, ...]}``.

It is a heuristic, deliberately strict and simple (no model, no NER library): it cannot tell a
number computed correctly from the sources (a sum, a conversion) from an invented one, and treats
both as unsupported; give such results through a tool. Names written in lower case are not
checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..messages import Message, ToolResultMessage, UserMessage
from .guardrails import Guardrail, GuardrailContext, GuardrailVerdict

__all__ = ["COMMON_WORDS", "FEEDBACK_PREFIX", "UNITS", "Claim", "claims", "grounding_guardrail", "unsupported_claims"]

UNITS = ("°C", "°F", "°", "%", "km/h", "mph", "km", "m/s", "m", "cm", "mm", "kg", "g", "lb", "hPa", "mm/h",
         "million", "billion", "thousand", "people", "inhabitants", "years", "hours", "minutes", "USD", "EUR", "$",
         "€", "C", "F", "K")
"""Units recognised right after a number (longest first when matching; ``C``/``F`` only as whole words)."""

COMMON_WORDS = frozenset({
    "i", "celsius", "fahrenheit", "kelvin", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
    "sunday", "ok", "yes", "no", "utc",
})
"""Capitalised words that are not checked as names (lower case)."""

FEEDBACK_PREFIX = "Not grounded: "
"""How the guardrail's retry messages start; user messages starting so are not sources (they quote the
claims they reject)."""

_UNIT_ALT = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
_NUMBER = re.compile(
    r"(?<![\w.])([-\u2212\u2013]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-\u2212\u2013]?\d+(?:\.\d+)?)(?![\w])"
    rf"(?:\s?({_UNIT_ALT})(?![A-Za-z]))?")
_NAME = re.compile(r"\b[A-Z][a-zA-Z'\u2019-]+\b")
_SENTENCE_ENDS = ".!?:;\"\u201c(*#-\u2022>"


@dataclass(frozen=True)
class Claim:
    """A number (with its unit, or None) or a name found in a text."""

    text: str
    """As written in the text."""
    value: float | None = None
    """The number's value (None for a name)."""
    unit: str | None = None

    @property
    def is_number(self) -> bool:
        """True for a number, False for a name."""
        return self.value is not None


def _value(raw: str) -> float:
    return float(raw.replace(",", "").replace("\u2212", "-").replace("\u2013", "-"))


def _unit(raw: str | None) -> str | None:
    if raw is None:
        return None
    return {"C": "°C", "F": "°F", "inhabitants": "people"}.get(raw, raw)


def claims(text: str) -> list[Claim]:
    """The numbers (with units) and names of ``text``, in order (see the module docstring for the rules)."""
    found: list[Claim] = []
    for match in _NUMBER.finditer(text):
        value, unit = _value(match.group(1)), _unit(match.group(2))
        line_start = text.rfind("\n", 0, match.start()) + 1
        marker = not text[line_start:match.start()].strip() and text[match.end():match.end() + 1] in (".", ")")
        if unit is None and value.is_integer() and 0 <= value <= 10 and marker:
            continue  # a list marker ("1. ...", "2) ..."), not a claim
        found.append(Claim(match.group(0).strip(), value, unit))
    for match in _NAME.finditer(text):
        word = re.sub("['\u2019]s$", "", match.group(0))  # Kyiv's: Kyiv
        before = text[max(0, match.start() - 8):match.start()].rstrip()
        if word.lower() in COMMON_WORDS or not before or before[-1] in _SENTENCE_ENDS:  # a sentence's first word
            continue
        found.append(Claim(word))
    return found


def _sources(history: Iterable[Message], known: Iterable[str]) -> str:
    texts = list(known)
    for message in history:
        if getattr(message, "excluded", None):
            continue
        if isinstance(message, ToolResultMessage) or (
                isinstance(message, UserMessage) and not message.text.startswith(FEEDBACK_PREFIX)):
            texts.append(message.text)
    return "\n".join(texts)


def unsupported_claims(answer: str, sources: str) -> list[Claim]:
    """The claims of ``answer`` that ``sources`` (one text) does not support."""
    numbers: dict[float, set[str | None]] = {}
    for match in _NUMBER.finditer(sources):  # small numbers too: "2 options" in a tool result supports "2"
        numbers.setdefault(_value(match.group(1)), set()).add(_unit(match.group(2)))
    words = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'\u2019-]*", sources)}
    missing = []
    for claim in claims(answer):
        if claim.value is not None:
            units = numbers.get(claim.value)
            ok = units is not None and (claim.unit is None or claim.unit in units or None in units)
        else:
            ok = claim.text.lower() in words
        if not ok and claim not in missing:
            missing.append(claim)
    return missing


def grounding_guardrail(*, retries: int = 2, known: Iterable[str] = (),
                        answer: str = "I do not know: no tool result or message gave me {claims}.",
                        name: str = "grounding") -> Guardrail:
    """An output guardrail sending back answers that state facts nobody gave (module docstring).

    Args:
        retries: answers sent back before the run ends (status ``guardrail_tripped``) with ``answer``.
        known: texts the answer may draw on besides the user's messages and the tool results (e.g. the
            facts of a system prompt).
        answer: the run's answer when the retries ran out; ``{claims}`` is replaced by the unsupported
            claims, quoted and joined with commas.
        name: the guardrail's name in events and answers.

    Returns:
        A ``Guardrail`` for ``Agent(output_guardrails=[...])``.
    """
    extra = tuple(known)

    def check(ctx: GuardrailContext) -> GuardrailVerdict | None:
        missing = unsupported_claims(ctx.text, _sources(ctx.history, extra))
        if not missing:
            return None
        listed = ", ".join(f"'{c.text}'" for c in missing)
        info = {"unsupported": [c.text for c in missing]}
        if ctx.attempt >= retries or ctx.last_turn:
            return GuardrailVerdict.tripwire(f"the answer states {listed}, which no tool result or user message "
                                             "gave", info, answer=answer.replace("{claims}", listed))
        return GuardrailVerdict.retry(
            f"{FEEDBACK_PREFIX}your answer states {listed}, but no tool result and no message of the user "
            "gave that. Use only numbers, units and names from the tool results or the user's messages, "
            "exactly as written there (call a tool if you need one); if they do not give the answer, say that "
            "you do not know.", info)

    return Guardrail(check, name=name)
