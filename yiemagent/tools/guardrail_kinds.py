"""Ready guardrails: personal data (PII) and an OpenAI-compatible moderation endpoint.

``pii_guardrail()`` finds e-mail addresses, phone numbers and payment card numbers (more with
Presidio). Its detector is, by default:

* Microsoft Presidio's pattern recognizers (``presidio-analyzer``: ``pip install -e ".[pii]"``;
  ``EmailRecognizer``, ``PhoneRecognizer`` (Google's ``phonenumbers``), ``CreditCardRecognizer``
  (Luhn checksum), ``IbanRecognizer``...), used without a spaCy model (none is downloaded);
* without Presidio, ``minimal_pii_detector``: three regular expressions of yiemagent's own, e-mail
  addresses, phone numbers written as ``+<country> ...`` or ``(415) 555-0132`` / ``415-555-0132``,
  and 13 to 19 digit card numbers that pass the Luhn checksum. It is a floor, not a PII scanner:
  names, addresses and national ids are not found.

``moderation_guardrail(base_url)`` posts the text to ``<base_url>/moderations`` (OpenAI's
``POST /v1/moderations``: ``{"model", "input"}`` in, ``{"results": [{"flagged", "categories",
"category_scores"}]}`` out) and trips when a result is flagged. A failed request (connection,
HTTP status, a body without ``results``) raises, which the loop counts as a tripwire: a check that
could not run does not let the text through.

Source: OpenAI API reference, "Moderations" (``POST /v1/moderations``); Presidio analyzer,
``presidio_analyzer.predefined_recognizers``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import requests

from .._internal.checks import all_of, check_number, one_of
from .._internal.jsonload import loads_bounded
from .guardrails import TOOL_STAGES, Guardrail, GuardrailContext, GuardrailVerdict, Stage

__all__ = ["PIIFinding", "minimal_pii_detector", "moderation_guardrail", "pii_guardrail", "presidio_detector"]


@dataclass(frozen=True)
class PIIFinding:
    """One piece of personal data in a text: ``text[start:end]`` is an ``entity``."""

    entity: str
    """Presidio's entity names: ``EMAIL_ADDRESS``, ``PHONE_NUMBER``, ``CREDIT_CARD``, ``IBAN_CODE``..."""
    start: int
    end: int
    score: float = 1.0
    """The detector's confidence, 0 to 1."""


Detector = Callable[[str], "list[PIIFinding]"]

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?(?:\(?\d{1,4}\)?[ .-]?){2,5}\d{2,4}"
                    r"|\(?\b\d{3}\)?[ .-]\d{3}[ .-]\d{4})\b")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def minimal_pii_detector(text: str) -> list[PIIFinding]:
    """E-mail addresses, phone numbers and Luhn-valid card numbers in ``text`` (module docstring)."""
    found = [PIIFinding("EMAIL_ADDRESS", m.start(), m.end()) for m in _EMAIL.finditer(text)]
    cards = [m for m in _CARD.finditer(text) if _luhn(re.sub(r"\D", "", m.group(0)))]
    found += [PIIFinding("CREDIT_CARD", m.start(), m.end()) for m in cards]
    for m in _PHONE.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 7 <= len(digits) <= 15 and not any(c.start() <= m.start() < c.end() for c in cards):
            found.append(PIIFinding("PHONE_NUMBER", m.start(), m.end(), 0.7))
    return sorted(found, key=lambda f: f.start)


def presidio_detector(entities: Iterable[str] | None = None) -> Detector:
    """A detector on Presidio's pattern recognizers (no spaCy model needed).

    Args:
        entities: the entity names kept (None: every entity of the recognizers loaded).

    Raises:
        ImportError: ``presidio-analyzer`` is not installed (``pip install -e ".[pii]"``).
    """
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        EmailRecognizer,
        IbanRecognizer,
        PhoneRecognizer,
    )

    recognizers = [EmailRecognizer(), PhoneRecognizer(), CreditCardRecognizer(), IbanRecognizer()]
    wanted = None if entities is None else set(entities)

    def detect(text: str) -> list[PIIFinding]:
        found = []
        for recognizer in recognizers:
            kinds = [e for e in recognizer.supported_entities if wanted is None or e in wanted]
            if kinds:
                found += [PIIFinding(r.entity_type, r.start, r.end, float(r.score))
                          for r in recognizer.analyze(text, kinds, None)]
        return sorted(found, key=lambda f: f.start)

    return detect


def _default_detector(entities: Iterable[str] | None) -> Detector:
    try:
        return presidio_detector(entities)
    except ImportError:
        return minimal_pii_detector


_NAMES = {"EMAIL_ADDRESS": "an e-mail address", "PHONE_NUMBER": "a phone number", "CREDIT_CARD": "a card number",
          "IBAN_CODE": "a bank account number (IBAN)"}


def pii_guardrail(*, entities: Iterable[str] | None = ("EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD"),
                  detector: Detector | None = None, min_score: float = 0.4,
                  action: Literal["tripwire", "retry"] = "tripwire", name: str = "pii",
                  stages: tuple[Stage, ...] = ("tool_input", "tool_output")) -> Guardrail:
    """A guardrail that does not let personal data through (for any stage's list).

    Args:
        entities: the kinds checked (Presidio's names); None: every kind the detector finds.
        detector: ``detector(text) -> [PIIFinding]``; None: Presidio's when installed, else
            ``minimal_pii_detector`` (module docstring).
        min_score: findings below this confidence are ignored.
        action: ``tripwire`` ends the run; ``retry`` sends an answer back / rejects a tool call.
        name: the guardrail's name.
        stages: as a tool guardrail, the stages checked.

    Returns:
        A ``Guardrail``; its verdict's ``info`` is ``{"found": [{"entity", "start", "end", "score"}]}``
        (positions only: the personal data is not copied into events, answers or the journal).
    """
    wanted = None if entities is None else tuple(entities)
    detect = detector if detector is not None else _default_detector(wanted)
    one_of("action", action, ("tripwire", "retry"))
    stages = all_of("stages", stages, TOOL_STAGES, empty=False)

    def check(ctx: GuardrailContext) -> GuardrailVerdict | None:
        found = [f for f in detect(ctx.text) if f.score >= min_score and (wanted is None or f.entity in wanted)]
        if not found:
            return None
        kinds = sorted({_NAMES.get(f.entity, f.entity) for f in found})
        info = {"found": [{"entity": f.entity, "start": f.start, "end": f.end, "score": f.score} for f in found]}
        reason = f"the text contains personal data: {', '.join(kinds)}"
        if action == "retry":
            return GuardrailVerdict.retry(f"Your text contains personal data ({', '.join(kinds)}); write it "
                                          "again without it.", info)
        return GuardrailVerdict.tripwire(reason, info)

    return Guardrail(check, name=name, stages=stages)


def moderation_guardrail(base_url: str, *, model: str = "omni-moderation-latest", api_key: str | None = None,
                         timeout_seconds: float = 30.0, name: str = "moderation",
                         session: Any = None) -> Guardrail:
    """A guardrail asking an OpenAI-compatible ``/moderations`` endpoint (module docstring).

    Args:
        base_url: the API's base, e.g. ``"http://127.0.0.1:8080/v1"`` (``/moderations`` is added).
        model: the moderation model named in the request.
        api_key: sent as ``Authorization: Bearer <api_key>``; None: no header.
        timeout_seconds: of one request.
        name: the guardrail's name.
        session: a ``requests.Session`` to send with (None: one made here).

    Returns:
        A ``Guardrail`` tripping on a flagged text; its ``info`` holds ``categories`` (the flagged
        names) and ``category_scores`` (the first flagged result's).

    Raises:
        requests.RequestException: from a check: the request failed or answered an HTTP error (the
            loop makes it a tripwire).
        ValueError: from a check: the answer has no ``results`` list (a tripwire too).
    """
    check_number("timeout_seconds", timeout_seconds)
    url = base_url.rstrip("/") + "/moderations"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    http = session if session is not None else requests.Session()

    def check(ctx: GuardrailContext) -> GuardrailVerdict | None:
        response = http.post(url, json={"model": model, "input": ctx.text}, headers=headers,
                             timeout=timeout_seconds)
        response.raise_for_status()
        document = loads_bounded(response.content)  # ValueError (a tripwire) for nesting too deep
        results = document.get("results") if isinstance(document, dict) else None
        if not isinstance(results, list) or not results:
            raise ValueError(f"{url} answered without a results list")
        flagged = [r for r in results if isinstance(r, dict) and r.get("flagged")]
        if not flagged:
            return None
        categories = sorted({k for r in flagged for k, v in (r.get("categories") or {}).items() if v})
        scores = flagged[0].get("category_scores") or {}
        return GuardrailVerdict.tripwire(f"flagged by moderation: {', '.join(categories) or 'unspecified'}",
                                         {"categories": categories, "category_scores": scores})

    return Guardrail(check, name=name)
